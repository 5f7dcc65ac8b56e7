// Scheduler tests with the compile handler and in-process fake workers over the real SQLite
// storage in a temp dir: priorities, single-flight, retry-once, deadlines, cancellation, watch
// events, persistence, capabilities; in-process kinds (tune) with a fake handler.
#include "server/scheduler.h"

#include <deque>
#include <future>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compiler_core/support/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cache/test_util.h"
#include "server/compile_handler.h"
#include "wire/options.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

/// Records what the scheduler sends; the test plays the worker's part.
class FakeWorker final : public WorkerChannel {
 public:
  void SendTask(const v1::WorkerTask& task) override {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(task);
  }
  void SendCancel(const std::string& task_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(task_id);
  }
  void Close(const absl::Status& why) override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  std::vector<v1::WorkerTask> tasks() {
    std::lock_guard<std::mutex> lock(mu_);
    return {tasks_.begin(), tasks_.end()};
  }
  std::vector<std::string> cancels() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancels_;
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

 private:
  std::mutex mu_;
  std::deque<v1::WorkerTask> tasks_;
  std::vector<std::string> cancels_;
  bool closed_ = false;
};

/// Collects a job's outcome.
struct Waiter {
  std::promise<JobOutcome> promise;
  std::future<JobOutcome> future = promise.get_future();
  JobCallback callback() {
    return [this](const JobOutcome& o) { promise.set_value(o); };
  }
  bool ready() { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  JobOutcome get() {
    EXPECT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    return future.get();
  }
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = cache::testing::OpenStorageIn(dir_);
    ASSERT_TRUE(storage.ok()) << storage.status();
    storage_ = std::move(*storage);
    compile_ = std::make_unique<CompileHandler>(storage_.get(), "testcpu");
    scheduler_ = MakeScheduler();
  }

  std::unique_ptr<Scheduler> MakeScheduler() {
    SchedulerOptions options;
    options.storage = storage_.get();
    options.handlers = {compile_.get()};
    options.heartbeat_timeout = absl::Seconds(30);
    options.tick_interval = absl::Milliseconds(20);
    return std::make_unique<Scheduler>(options);
  }

  absl::StatusOr<Ticket> Submit(const CompileSpec& spec, absl::Time deadline, bool detached,
                                JobCallback on_done) {
    return scheduler_->Submit(CompileJobSpec(spec), deadline, detached, std::move(on_done));
  }

  /// A spec whose key is unique per `name`.
  CompileSpec Spec(const std::string& name, v1::Priority priority = v1::INTERACTIVE) {
    CompileSpec spec;
    spec.model_digest = Sha256Hex(name);
    spec.model_size_bytes = 10;
    spec.target = "host";
    spec.priority = priority;
    spec.key = cache::ArtifactKey{Sha256Hex(absl::StrCat("graph-", name)), "cpu:testcpu",
                                  "kiln-test", wire::OptionsHash(spec.options)};
    return spec;
  }

  std::shared_ptr<FakeWorker> AddWorker(std::string* id, int slots = 1,
                                        const std::string& cpu = "testcpu") {
    auto worker = std::make_shared<FakeWorker>();
    v1::Worker info;
    v1::CompileCapability* compile =
        info.mutable_capabilities()->add_capabilities()->mutable_compile();
    compile->add_target_kinds("cpu");
    compile->set_host_cpu(cpu);
    info.set_slots(slots);
    *id = scheduler_->AddWorker(info, worker);
    return worker;
  }

  /// Plays a worker that compiled `task` successfully: stores the artifact, reports it.
  void Succeed(const std::string& worker_id, const v1::WorkerTask& task) {
    ASSERT_TRUE(task.has_compile()) << task.DebugString();
    std::string artifact = absl::StrCat("artifact for ", task.compile().key().graph_hash());
    auto digest = storage_->PutBlob(cache::BlobKind::kArtifact, artifact);
    ASSERT_TRUE(digest.ok()) << digest.status();
    v1::TaskResult result;
    result.set_task_id(task.task_id());
    v1::CompileResult& compiled = *result.mutable_compile();
    compiled.mutable_artifact_digest()->set_hash(*digest);
    compiled.mutable_artifact_digest()->set_size_bytes(static_cast<int64_t>(artifact.size()));
    *compiled.mutable_key() = task.compile().key();
    compiled.set_compile_ms(12);
    scheduler_->TaskDone(worker_id, result);
  }

  cache::JobState StoredState(const std::string& job_id) {
    auto record = storage_->GetJob(job_id);
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? record->state : cache::JobState::kFailed;
  }

  cache::testing::TempDir dir_;
  std::unique_ptr<cache::Storage> storage_;
  std::unique_ptr<CompileHandler> compile_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, CompilesOnAWorkerAndFilesTheArtifact) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kQueued);

  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  v1::WorkerTask task = worker->tasks()[0];
  EXPECT_EQ(task.job_id(), ticket->job_id);
  ASSERT_TRUE(task.has_compile());
  EXPECT_EQ(task.compile().target(), "host");
  EXPECT_EQ(task.compile().model_digest().hash(), Spec("a").model_digest);
  EXPECT_EQ(task.compile().key().graph_hash(), Spec("a").key.graph_hash);
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kRunning);

  Succeed(wid, task);
  JobOutcome outcome = w.get();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(CompileResponseOf(outcome.result).job_id(), ticket->job_id);
  EXPECT_EQ(CompileResponseOf(outcome.result).worker(), wid);
  EXPECT_EQ(CompileResponseOf(outcome.result).key().graph_hash(), Spec("a").key.graph_hash);
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kSucceeded);
  auto entry = storage_->LookupArtifact(Spec("a").key);
  ASSERT_TRUE(entry.ok() && entry->has_value());
  EXPECT_EQ((*entry)->artifact_digest, CompileResponseOf(outcome.result).artifact_digest().hash());
  EXPECT_EQ(scheduler_->GetCounts().running, 0);
}

TEST_F(SchedulerTest, InteractiveRunsBeforeBatch) {
  auto batch = Submit(Spec("batch", v1::BATCH), absl::InfiniteFuture(), true, nullptr);
  auto batch2 = Submit(Spec("batch2", v1::BATCH), absl::InfiniteFuture(), true, nullptr);
  auto interactive = Submit(Spec("interactive"), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(batch.ok() && batch2.ok() && interactive.ok());

  std::string wid;
  auto worker = AddWorker(&wid, /*slots=*/1);
  ASSERT_EQ(worker->tasks().size(), 1u);
  EXPECT_EQ(worker->tasks()[0].job_id(), interactive->job_id);
  Succeed(wid, worker->tasks()[0]);
  ASSERT_EQ(worker->tasks().size(), 2u);
  EXPECT_EQ(worker->tasks()[1].job_id(), batch->job_id);  // FIFO within BATCH
  Succeed(wid, worker->tasks()[1]);
  ASSERT_EQ(worker->tasks().size(), 3u);
  EXPECT_EQ(worker->tasks()[2].job_id(), batch2->job_id);
}

TEST_F(SchedulerTest, InteractiveRequestPromotesQueuedBatchJob) {
  auto other = Submit(Spec("other", v1::BATCH), absl::InfiniteFuture(), true, nullptr);
  auto batch = Submit(Spec("x", v1::BATCH), absl::InfiniteFuture(), true, nullptr);
  auto joined = Submit(Spec("x", v1::INTERACTIVE), absl::InfiniteFuture(), false, nullptr);
  ASSERT_TRUE(other.ok() && batch.ok() && joined.ok());
  EXPECT_TRUE(joined->joined);
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  EXPECT_EQ(worker->tasks()[0].job_id(), batch->job_id);
}

TEST_F(SchedulerTest, SingleFlightRunsOneJobForIdenticalRequests) {
  std::vector<std::unique_ptr<Waiter>> waiters;
  std::set<std::string> job_ids;
  for (int i = 0; i < 8; ++i) {
    waiters.push_back(std::make_unique<Waiter>());
    auto ticket = Submit(Spec("same"), absl::InfiniteFuture(), false, waiters.back()->callback());
    ASSERT_TRUE(ticket.ok());
    EXPECT_EQ(ticket->joined, i > 0);
    job_ids.insert(ticket->job_id);
  }
  EXPECT_EQ(job_ids.size(), 1u);
  std::string wid;
  auto worker = AddWorker(&wid, /*slots=*/4);
  ASSERT_EQ(worker->tasks().size(), 1u);
  Succeed(wid, worker->tasks()[0]);
  std::set<std::string> digests;
  for (auto& w : waiters) {
    JobOutcome o = w->get();
    ASSERT_TRUE(o.status.ok()) << o.status;
    digests.insert(CompileResponseOf(o.result).artifact_digest().hash());
  }
  EXPECT_EQ(digests.size(), 1u);
  auto jobs = storage_->ListJobs({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);

  // Once finished, an identical request is a new job (the service checks the cache first).
  auto again = Submit(Spec("same"), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->joined);
}

TEST_F(SchedulerTest, WorkerDeathIsRetriedOnceOnAnotherWorker) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  ASSERT_TRUE(ticket.ok());
  std::string w1, w2;
  auto worker1 = AddWorker(&w1);
  auto worker2 = AddWorker(&w2);
  auto first = worker1->tasks().empty() ? worker2 : worker1;
  auto second = first == worker1 ? worker2 : worker1;
  std::string first_id = first == worker1 ? w1 : w2;
  std::string second_id = first == worker1 ? w2 : w1;
  ASSERT_EQ(first->tasks().size(), 1u);

  scheduler_->RemoveWorker(first_id, absl::UnavailableError("killed"));
  EXPECT_FALSE(w.ready());
  ASSERT_EQ(second->tasks().size(), 1u);
  EXPECT_NE(second->tasks()[0].task_id(), first->tasks()[0].task_id());
  Succeed(second_id, second->tasks()[0]);
  JobOutcome outcome = w.get();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  auto record = storage_->GetJob(ticket->job_id);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->attempts, 2);
  EXPECT_EQ(record->worker, second_id);
}

TEST_F(SchedulerTest, SecondWorkerDeathFailsTheJobClearly) {
  Waiter w;
  auto ticket = Submit(Spec("crasher"), absl::InfiniteFuture(), false, w.callback());
  ASSERT_TRUE(ticket.ok());
  std::string w1;
  auto worker1 = AddWorker(&w1);
  ASSERT_EQ(worker1->tasks().size(), 1u);
  scheduler_->RemoveWorker(w1, absl::UnavailableError("connection closed"));
  std::string w2;
  auto worker2 = AddWorker(&w2);  // e.g. the restarted worker
  ASSERT_EQ(worker2->tasks().size(), 1u);
  scheduler_->RemoveWorker(w2, absl::UnavailableError("connection closed"));
  JobOutcome outcome = w.get();
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(outcome.status.message()),
              HasSubstr("died or disconnected on each of 2"));
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kFailed);
  auto record = storage_->GetJob(ticket->job_id);
  EXPECT_EQ(record->error.code(), absl::StatusCode::kInternal);
}

TEST_F(SchedulerTest, CompileErrorFailsWithoutRetry) {
  Waiter w;
  auto ticket = Submit(Spec("bad"), absl::InfiniteFuture(), false, w.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  v1::TaskResult result;
  result.set_task_id(worker->tasks()[0].task_id());
  result.set_error_code(static_cast<int>(absl::StatusCode::kUnimplemented));
  result.set_error_message("node 'n1' (Foo): unsupported op");
  scheduler_->TaskDone(wid, result);
  JobOutcome outcome = w.get();
  EXPECT_EQ(outcome.status, absl::UnimplementedError("node 'n1' (Foo): unsupported op"));
  EXPECT_EQ(worker->tasks().size(), 1u);
}

TEST_F(SchedulerTest, KeyMismatchFromWorkerIsInternal) {
  Waiter w;
  ASSERT_TRUE(Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback()).ok());
  std::string wid;
  auto worker = AddWorker(&wid);
  v1::WorkerTask task = worker->tasks().at(0);
  task.mutable_compile()->mutable_key()->set_target_key("cpu:elsewhere");
  Succeed(wid, task);
  EXPECT_EQ(w.get().status.code(), absl::StatusCode::kInternal);
}

TEST_F(SchedulerTest, QueuedJobPastItsDeadlineFails) {
  Waiter w;
  auto ticket = Submit(Spec("slow"), absl::Now() + absl::Milliseconds(30), false, w.callback());
  ASSERT_TRUE(ticket.ok());
  JobOutcome outcome = w.get();  // the tick thread notices
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kFailed);
}

TEST_F(SchedulerTest, RunningJobPastItsDeadlineIsCancelledOnTheWorker) {
  Waiter w;
  auto ticket = Submit(Spec("slow"), absl::Now() + absl::Milliseconds(100), false, w.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  EXPECT_GT(worker->tasks()[0].deadline_unix_ms(), 0);
  JobOutcome outcome = w.get();
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(worker->cancels(), ::testing::ElementsAre(worker->tasks()[0].task_id()));
  // A late success is not filed: a result is accepted only while its task is live.
  Succeed(wid, worker->tasks()[0]);
  auto entry = storage_->LookupArtifact(Spec("slow").key);
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(entry->has_value());
}

TEST_F(SchedulerTest, AWorkerCannotCompleteAnotherWorkersTask) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  ASSERT_TRUE(ticket.ok());
  std::string owner_id, thief_id;
  auto owner = AddWorker(&owner_id);
  ASSERT_EQ(owner->tasks().size(), 1u);
  auto thief = AddWorker(&thief_id);
  // The thief learned the task id (ListJobs shows it) and reports a result for it.
  Succeed(thief_id, owner->tasks()[0]);
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kRunning);
  auto entry = storage_->LookupArtifact(Spec("a").key);
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(entry->has_value());
  // The worker the task was sent to still completes it.
  Succeed(owner_id, owner->tasks()[0]);
  EXPECT_TRUE(w.get().status.ok());
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kSucceeded);
}

TEST_F(SchedulerTest, AbandonedJobIsCancelledUnlessDetached) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  scheduler_->Abandon(*ticket);
  EXPECT_EQ(worker->cancels().size(), 1u);
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kCancelled);
  // The worker keeps its slot until it reports the cancelled task.
  auto next = Submit(Spec("b"), absl::InfiniteFuture(), true, nullptr);
  EXPECT_EQ(worker->tasks().size(), 1u);
  v1::TaskResult cancelled;
  cancelled.set_task_id(worker->tasks()[0].task_id());
  cancelled.set_error_code(static_cast<int>(absl::StatusCode::kCancelled));
  scheduler_->TaskDone(wid, cancelled);
  EXPECT_EQ(worker->tasks().size(), 2u);

  // A detached (SubmitJob) job survives its waiters leaving.
  Waiter w2;
  auto joined = Submit(Spec("b"), absl::InfiniteFuture(), false, w2.callback());
  ASSERT_TRUE(joined.ok() && joined->joined);
  scheduler_->Abandon(*joined);
  EXPECT_EQ(StoredState(next->job_id), cache::JobState::kRunning);
}

TEST_F(SchedulerTest, CancelJob) {
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), true, nullptr);
  auto state = scheduler_->Cancel(ticket->job_id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, v1::CANCELLED);
  EXPECT_EQ(scheduler_->Cancel(ticket->job_id).value(), v1::CANCELLED);
  EXPECT_EQ(scheduler_->Cancel("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, WatchStreamsEventsUntilTerminal) {
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), true, nullptr);
  std::mutex mu;
  std::vector<std::pair<v1::JobState, bool>> events;
  uint64_t watch_id = 0;
  bool last = false;
  auto first = scheduler_->Watch(
      ticket->job_id,
      [&](const v1::JobEvent& e, bool is_last) {
        std::lock_guard<std::mutex> lock(mu);
        events.push_back({e.state(), is_last});
      },
      &watch_id, &last);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->state(), v1::QUEUED);
  EXPECT_FALSE(last);
  std::string wid;
  auto worker = AddWorker(&wid);
  Succeed(wid, worker->tasks().at(0));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], std::make_pair(v1::RUNNING, false));
  EXPECT_EQ(events[1], std::make_pair(v1::SUCCEEDED, true));

  // A finished job is answered from storage, as the last event.
  auto done = scheduler_->Watch(ticket->job_id, nullptr, &watch_id, &last);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::SUCCEEDED);
  EXPECT_TRUE(last);
  EXPECT_FALSE(done->result().artifact_digest().hash().empty());
  EXPECT_EQ(scheduler_->Watch("nope", nullptr, &watch_id, &last).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, HostJobsGoOnlyToWorkersOnKilndsCpu) {
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), true, nullptr);
  std::string other_id;
  auto other = AddWorker(&other_id, 1, "othercpu");
  EXPECT_TRUE(other->tasks().empty());
  CompileSpec named = Spec("b");
  named.target = "cpu:znver4";
  ASSERT_TRUE(Submit(named, absl::InfiniteFuture(), true, nullptr).ok());
  EXPECT_EQ(other->tasks().size(), 1u);  // a named CPU can compile anywhere
}

TEST_F(SchedulerTest, CompileJobsGoOnlyToWorkersWithAFittingCompileCapability) {
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(ticket.ok());
  // A measure-only worker on a device, and a compile worker for another target kind.
  auto measurer = std::make_shared<FakeWorker>();
  v1::Worker measure_info;
  v1::MeasureCapability* measure =
      measure_info.mutable_capabilities()->add_capabilities()->mutable_measure();
  measure->set_device_kind("cuda");
  measure->set_device_name("NVIDIA H200");
  scheduler_->AddWorker(measure_info, measurer);
  auto cuda_only = std::make_shared<FakeWorker>();
  v1::Worker cuda_info;
  cuda_info.mutable_capabilities()->add_capabilities()->mutable_compile()->add_target_kinds("cuda");
  scheduler_->AddWorker(cuda_info, cuda_only);
  auto bare = std::make_shared<FakeWorker>();
  scheduler_->AddWorker(v1::Worker(), bare);
  scheduler_->TickForTesting();
  EXPECT_TRUE(measurer->tasks().empty());
  EXPECT_TRUE(cuda_only->tasks().empty());
  EXPECT_TRUE(bare->tasks().empty());
  EXPECT_EQ(scheduler_->GetCounts().queued, 1);
  std::string wid;
  auto compiler = AddWorker(&wid);
  ASSERT_EQ(compiler->tasks().size(), 1u);
  EXPECT_EQ(compiler->tasks()[0].job_id(), ticket->job_id);

  std::vector<v1::Worker> listed = scheduler_->ListWorkers();
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0].capabilities().capabilities(0).measure().device_name(), "NVIDIA H200");
}

TEST_F(SchedulerTest, KindsWithoutAHandlerAreRefused) {
  JobSpec tune = CompileJobSpec(Spec("a"));
  tune.kind = cache::JobKind::kTune;
  EXPECT_EQ(scheduler_->Submit(tune, absl::InfiniteFuture(), true, nullptr).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(SchedulerTest, MissedHeartbeatsDropTheWorker) {
  scheduler_.reset();
  SchedulerOptions options;
  options.storage = storage_.get();
  options.handlers = {compile_.get()};
  options.heartbeat_timeout = absl::Milliseconds(50);
  options.tick_interval = absl::Milliseconds(10);
  scheduler_ = std::make_unique<Scheduler>(options);
  std::string wid;
  auto worker = AddWorker(&wid);
  for (int i = 0; i < 200 && scheduler_->GetCounts().workers > 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(scheduler_->GetCounts().workers, 0);
  EXPECT_TRUE(worker->closed());
}

TEST_F(SchedulerTest, DrainPersistsLiveJobsAndRestoreResumesThem) {
  Waiter running_waiter;
  auto running = Submit(Spec("running"), absl::InfiniteFuture(), false, running_waiter.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  auto queued = Submit(Spec("queued", v1::BATCH), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(running.ok() && queued.ok());

  scheduler_->Drain(absl::Milliseconds(50));
  JobOutcome outcome = running_waiter.get();
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(worker->cancels(), ::testing::ElementsAre(worker->tasks()[0].task_id()));
  EXPECT_EQ(StoredState(running->job_id), cache::JobState::kQueued);
  EXPECT_EQ(StoredState(queued->job_id), cache::JobState::kQueued);
  EXPECT_EQ(Submit(Spec("late"), absl::InfiniteFuture(), true, nullptr).status().code(),
            absl::StatusCode::kUnavailable);

  // "Restart": a new scheduler over the same storage restores both, interactive first.
  scheduler_ = MakeScheduler();
  auto live = storage_->JobsInState(cache::JobState::kQueued);
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 2u);
  for (const cache::JobRecord& record : *live) {
    CompileSpec spec = record.id == running->job_id ? Spec("running") : Spec("queued", v1::BATCH);
    ASSERT_TRUE(scheduler_->Restore(record, CompileJobSpec(spec)).ok());
  }
  std::string wid2;
  auto worker2 = AddWorker(&wid2, /*slots=*/1);
  ASSERT_EQ(worker2->tasks().size(), 1u);
  EXPECT_EQ(worker2->tasks()[0].job_id(), running->job_id);
  Succeed(wid2, worker2->tasks()[0]);
  ASSERT_EQ(worker2->tasks().size(), 2u);
  EXPECT_EQ(worker2->tasks()[1].job_id(), queued->job_id);
  Succeed(wid2, worker2->tasks()[1]);
  EXPECT_EQ(StoredState(running->job_id), cache::JobState::kSucceeded);
  EXPECT_EQ(StoredState(queued->job_id), cache::JobState::kSucceeded);
}

TEST_F(SchedulerTest, DrainWaitsForRunningJobsWithinGrace) {
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), true, nullptr);
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  std::thread finisher([&] {
    absl::SleepFor(absl::Milliseconds(50));
    Succeed(wid, worker->tasks()[0]);
  });
  scheduler_->Drain(absl::Seconds(10));
  finisher.join();
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kSucceeded);
  EXPECT_TRUE(worker->cancels().empty());
}

TEST_F(SchedulerTest, RefusedTaskIsRequeuedNotFailed) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  v1::TaskResult refused;
  refused.set_task_id(worker->tasks()[0].task_id());
  refused.set_error_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  refused.set_error_message("all slots busy");
  refused.set_refused(true);
  scheduler_->TaskDone(wid, refused);
  EXPECT_FALSE(w.ready());
  for (int i = 0; i < 200 && worker->tasks().size() < 2; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(worker->tasks().size(), 2u);  // redispatched after the cooldown
  Succeed(wid, worker->tasks()[1]);
  EXPECT_TRUE(w.get().status.ok());
}

// A task that ran out of disk space is not a refusal: its job fails with that error at once,
// rather than being compiled again and again (a full disk livelocked kilnd).
TEST_F(SchedulerTest, ATaskThatRanOutOfSpaceFailsItsJobWithoutRetrying) {
  Waiter w;
  auto ticket = Submit(Spec("a"), absl::InfiniteFuture(), false, w.callback());
  std::string wid;
  auto worker = AddWorker(&wid);
  ASSERT_EQ(worker->tasks().size(), 1u);
  v1::TaskResult full;
  full.set_task_id(worker->tasks()[0].task_id());
  full.set_error_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  full.set_error_message("UploadArtifact: write: No space left on device");
  scheduler_->TaskDone(wid, full);
  JobOutcome outcome = w.get();
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(outcome.status.message(), "UploadArtifact: write: No space left on device");
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(worker->tasks().size(), 1u);  // never sent again
  EXPECT_EQ(StoredState(ticket->job_id), cache::JobState::kFailed);
}

/// An in-process kind (as tune jobs are): records Start and Stop; the test ends the runs.
class FakeInProcessHandler final : public JobHandler {
 public:
  cache::JobKind kind() const override { return cache::JobKind::kTune; }
  bool RunsInProcess() const override { return true; }
  void Start(const std::string& job_id, const std::string& run_id, const JobSpec&) override {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.push_back({job_id, run_id});
  }
  void Stop(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    stops_.push_back(job_id);
  }
  bool CanRun(const JobSpec&, const v1::WorkerCapabilities&) const override { return false; }
  void BuildTask(const JobSpec&, v1::WorkerTask&) const override {}
  absl::StatusOr<JobResult> TaskSucceeded(const JobSpec&, const std::string&, const std::string&,
                                          const v1::TaskResult&) override {
    return absl::InternalError("no tasks");
  }
  void DescribeResult(const std::string& persisted, v1::JobEvent& event) const override {
    event.mutable_tune_result()->ParseFromString(persisted);
  }
  std::vector<std::pair<std::string, std::string>> starts() {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_;
  }
  std::vector<std::string> stops() {
    std::lock_guard<std::mutex> lock(mu_);
    return stops_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> starts_;  // (job id, run id)
  std::vector<std::string> stops_;
};

template <typename Pred>
bool SoonTrue(Pred pred) {
  for (int i = 0; i < 500 && !pred(); ++i) absl::SleepFor(absl::Milliseconds(10));
  return pred();
}

JobSpec InProcessJob(const std::string& name) {
  JobSpec job;
  job.kind = cache::JobKind::kTune;
  job.dedup_key = "tune|" + name;
  job.priority = v1::BATCH;
  job.request = name;
  job.payload = std::make_shared<JobPayload>();
  return job;
}

// In-process jobs start without any worker, at most max_in_process at once; a cancel stops
// the run and its late finish is ignored; a drain does not wait for them and persists them as
// queued.
TEST_F(SchedulerTest, InProcessJobsRunWithoutWorkersOneAtATime) {
  FakeInProcessHandler tune;
  SchedulerOptions options;
  options.storage = storage_.get();
  options.handlers = {compile_.get(), &tune};
  options.tick_interval = absl::Milliseconds(20);
  options.max_in_process = 1;
  auto scheduler = std::make_unique<Scheduler>(options);
  Waiter wa;
  absl::StatusOr<Ticket> a =
      scheduler->Submit(InProcessJob("a"), absl::InfiniteFuture(), true, wa.callback());
  absl::StatusOr<Ticket> b =
      scheduler->Submit(InProcessJob("b"), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(SoonTrue([&] { return tune.starts().size() == 1; }));
  EXPECT_EQ(tune.starts()[0].first, a->job_id);
  EXPECT_EQ(storage_->GetJob(a->job_id)->state, cache::JobState::kRunning);
  EXPECT_EQ(storage_->GetJob(b->job_id)->state, cache::JobState::kQueued) << "one at a time";

  v1::TuneResult result;
  result.set_target_key("cpu:test");
  JobResult done;
  *done.event.mutable_tune_result() = result;
  done.persisted = result.SerializeAsString();
  scheduler->FinishInProcess(a->job_id, "not-its-run", absl::OkStatus(), done);  // stale
  EXPECT_FALSE(wa.ready());
  scheduler->FinishInProcess(a->job_id, tune.starts()[0].second, absl::OkStatus(), done);
  EXPECT_TRUE(wa.get().status.ok());
  EXPECT_EQ(storage_->GetJob(a->job_id)->state, cache::JobState::kSucceeded);
  ASSERT_TRUE(SoonTrue([&] { return tune.starts().size() == 2; }));
  EXPECT_EQ(tune.starts()[1].first, b->job_id);

  absl::StatusOr<v1::JobState> cancelled = scheduler->Cancel(b->job_id);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, v1::CANCELLED);
  EXPECT_THAT(tune.stops(), ::testing::ElementsAre(b->job_id));
  scheduler->FinishInProcess(b->job_id, tune.starts()[1].second, absl::OkStatus(), done);
  EXPECT_EQ(storage_->GetJob(b->job_id)->state, cache::JobState::kCancelled);

  absl::StatusOr<Ticket> c =
      scheduler->Submit(InProcessJob("c"), absl::InfiniteFuture(), true, nullptr);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(SoonTrue([&] { return tune.starts().size() == 3; }));
  const absl::Time before = absl::Now();
  scheduler->Drain(absl::Seconds(20));
  EXPECT_LT(absl::Now() - before, absl::Seconds(5)) << "the drain waited for an in-process job";
  EXPECT_THAT(tune.stops(), ::testing::ElementsAre(b->job_id, c->job_id));
  EXPECT_EQ(storage_->GetJob(c->job_id)->state, cache::JobState::kQueued);
  scheduler->FinishInProcess(c->job_id, tune.starts()[2].second, absl::OkStatus(), done);
  EXPECT_EQ(storage_->GetJob(c->job_id)->state, cache::JobState::kQueued);
}

}  // namespace
}  // namespace kiln::server
