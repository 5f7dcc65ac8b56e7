// JobQueue on its own (no workers, no handlers) over the real SQLite storage in a temp dir: run
// order, single-flight per kind, requeue in place, deadlines, waiters and watch events,
// persistence and restore.
#include "server/job_queue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cache/test_util.h"

namespace kiln::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// A job of `kind` deduplicated on `key`; the queue never looks at a payload.
JobSpec Spec(const std::string& key, v1::Priority priority = v1::INTERACTIVE,
             cache::JobKind kind = cache::JobKind::kCompile) {
  JobSpec spec;
  spec.kind = kind;
  spec.dedup_key = key;
  spec.priority = priority;
  spec.request = "request of " + key;
  return spec;
}

JobResult Result(const std::string& text) {
  JobResult result;
  result.event.mutable_result()->set_worker(text);  // any result field the kind might set
  result.persisted = text;
  return result;
}

/// Records outcomes and events as the queue's callbacks deliver them.
struct Recorder {
  std::vector<JobOutcome> outcomes;
  std::vector<std::pair<v1::JobEvent, bool>> events;
  JobCallback waiter() {
    return [this](const JobOutcome& o) { outcomes.push_back(o); };
  }
  JobEventCallback watcher() {
    return [this](const v1::JobEvent& e, bool last) { events.push_back({e, last}); };
  }
};

class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = cache::testing::OpenStorageIn(dir_);
    ASSERT_TRUE(storage.ok()) << storage.status();
    storage_ = std::move(*storage);
    queue_ = MakeQueue();
  }

  std::unique_ptr<JobQueue> MakeQueue() {
    JobQueueOptions options;
    options.storage = storage_.get();
    options.on_end = [this](const LiveJob& job) { ended_.push_back({job.id, job.task_id}); };
    options.describe_result = [](const cache::JobRecord& record, v1::JobEvent& event) {
      event.mutable_result()->set_worker("described:" + record.result);
    };
    return std::make_unique<JobQueue>(options);
  }

  std::string Submit(const JobSpec& spec, Recorder* recorder = nullptr, bool detached = true,
                     absl::Time deadline = absl::InfiniteFuture()) {
    Notifications n;
    auto ticket =
        queue_->Submit(spec, deadline, detached, recorder ? recorder->waiter() : nullptr, n);
    EXPECT_TRUE(ticket.ok()) << ticket.status();
    n.Run();
    return ticket.ok() ? ticket->job_id : "";
  }

  cache::JobRecord Stored(const std::string& job_id) {
    auto record = storage_->GetJob(job_id);
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? *record : cache::JobRecord{};
  }

  cache::testing::TempDir dir_;
  std::unique_ptr<cache::Storage> storage_;
  std::unique_ptr<JobQueue> queue_;
  std::vector<std::pair<std::string, std::string>> ended_;  // (job id, task id) from on_end
};

TEST_F(JobQueueTest, InteractiveRunsBeforeBatchAndFifoWithinAClass) {
  std::string b1 = Submit(Spec("b1", v1::BATCH));
  std::string i1 = Submit(Spec("i1"));
  std::string b2 = Submit(Spec("b2", v1::BATCH));
  std::string i2 = Submit(Spec("i2"));
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(i1, i2, b1, b2));
  EXPECT_EQ(queue_->queued(), 4);
  EXPECT_EQ(queue_->running(), 0);
  cache::JobRecord record = Stored(b1);
  EXPECT_EQ(record.state, cache::JobState::kQueued);
  EXPECT_EQ(record.request, "request of b1");
  EXPECT_LT(record.priority, Stored(i1).priority);
}

TEST_F(JobQueueTest, SingleFlightIsPerKindAndKeyAndInteractivePromotes) {
  std::string other = Submit(Spec("other", v1::BATCH));
  std::string batch = Submit(Spec("x", v1::BATCH));
  Notifications n;
  auto joined =
      queue_->Submit(Spec("x", v1::INTERACTIVE), absl::InfiniteFuture(), false, nullptr, n);
  ASSERT_TRUE(joined.ok());
  EXPECT_TRUE(joined->joined);
  EXPECT_EQ(joined->job_id, batch);
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(batch, other));  // promoted

  // The same key of another kind is another job.
  std::string tune = Submit(Spec("x", v1::BATCH, cache::JobKind::kTune));
  EXPECT_NE(tune, batch);
  auto jobs = storage_->ListJobs({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 3u);
}

TEST_F(JobQueueTest, StartAndRequeueKeepTheJobsPlaceAndCountAttempts) {
  std::string first = Submit(Spec("first"));
  std::string second = Submit(Spec("second"));
  Notifications n;
  EXPECT_EQ(queue_->Start(first, "w1", n), first + ".1");
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(second));
  EXPECT_EQ(queue_->running(), 1);
  EXPECT_EQ(Stored(first).state, cache::JobState::kRunning);
  EXPECT_EQ(Stored(first).worker, "w1");
  EXPECT_NE(queue_->FindByTask(first, first + ".1"), nullptr);
  EXPECT_EQ(queue_->FindByTask(first, first + ".0"), nullptr);

  queue_->Requeue(first, "worker w1 refused", n);
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(first, second));
  EXPECT_EQ(queue_->FindByTask(first, first + ".1"), nullptr);  // that task is stale now
  EXPECT_EQ(Stored(first).state, cache::JobState::kQueued);
  EXPECT_EQ(queue_->Start(first, "w2", n), first + ".2");
  EXPECT_EQ(Stored(first).attempts, 2);
}

TEST_F(JobQueueTest, FinishDeliversTheResultToWaitersWatchersAndStorage) {
  Recorder r;
  std::string id = Submit(Spec("a"), &r, /*detached=*/false);
  uint64_t watch_id = 0;
  bool last = true;
  auto first = queue_->Watch(id, r.watcher(), &watch_id, &last);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->state(), v1::QUEUED);
  EXPECT_FALSE(last);

  Notifications n;
  queue_->Start(id, "w1", n);
  queue_->Progress(id, "measured 3 of 8 candidates", n);
  queue_->ClearTask(id);
  queue_->Finish(id, absl::OkStatus(), Result("r1"), n);
  // Callbacks wait for the owner to release its lock.
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_TRUE(r.events.empty());
  n.Run();

  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_TRUE(r.outcomes[0].status.ok());
  EXPECT_EQ(r.outcomes[0].result.persisted, "r1");
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].first.state(), v1::RUNNING);
  EXPECT_EQ(r.events[1].first.state(), v1::RUNNING);
  EXPECT_EQ(r.events[1].first.message(), "measured 3 of 8 candidates");
  EXPECT_EQ(r.events[2].first.state(), v1::SUCCEEDED);
  EXPECT_EQ(r.events[2].first.job_id(), id);
  EXPECT_EQ(r.events[2].first.result().worker(), "r1");
  EXPECT_TRUE(r.events[2].second);
  EXPECT_THAT(ended_, ElementsAre(std::make_pair(id, std::string())));
  EXPECT_EQ(queue_->Find(id), nullptr);

  cache::JobRecord record = Stored(id);
  EXPECT_EQ(record.state, cache::JobState::kSucceeded);
  EXPECT_EQ(record.result, "r1");
  // A finished job is answered from storage, with the kind's description of its result.
  auto done = queue_->Watch(id, nullptr, &watch_id, &last);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(last);
  EXPECT_EQ(done->state(), v1::SUCCEEDED);
  EXPECT_EQ(done->result().worker(), "described:r1");
  EXPECT_EQ(queue_->Watch("nope", nullptr, &watch_id, &last).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(JobQueueTest, ExpiredJobsFailAndARunningOnesTaskIsHandedBackForCancelling) {
  absl::Time now = absl::Now();
  Recorder queued, running;
  std::string q = Submit(Spec("queued"), &queued, false, now - absl::Milliseconds(1));
  std::string r = Submit(Spec("running"), &running, false, now);
  std::string later = Submit(Spec("later"), nullptr, true, now + absl::Hours(1));
  Notifications n;
  std::string task = queue_->Start(r, "w1", n);
  queue_->ExpireDeadlines(now, n);
  n.Run();

  ASSERT_EQ(queued.outcomes.size(), 1u);
  EXPECT_EQ(queued.outcomes[0].status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(queued.outcomes[0].status.message()), HasSubstr("while queued"));
  ASSERT_EQ(running.outcomes.size(), 1u);
  EXPECT_THAT(std::string(running.outcomes[0].status.message()), HasSubstr("while running"));
  EXPECT_EQ(Stored(q).state, cache::JobState::kFailed);
  EXPECT_EQ(Stored(r).error.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(ended_, ::testing::UnorderedElementsAre(std::make_pair(q, std::string()),
                                                      std::make_pair(r, task)));
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(later));
}

TEST_F(JobQueueTest, JoiningExtendsTheDeadline) {
  absl::Time now = absl::Now();
  std::string id = Submit(Spec("a"), nullptr, false, now);
  Submit(Spec("a"), nullptr, false, now + absl::Hours(1));
  Notifications n;
  queue_->ExpireDeadlines(now, n);
  EXPECT_NE(queue_->Find(id), nullptr);
}

TEST_F(JobQueueTest, AbandonCancelsOnlyAnAttachedJobWithNoWaiterLeft) {
  Notifications n;
  auto t1 = queue_->Submit(
      Spec("a"), absl::InfiniteFuture(), false, [](const JobOutcome&) {}, n);
  auto t2 = queue_->Submit(
      Spec("a"), absl::InfiniteFuture(), false, [](const JobOutcome&) {}, n);
  ASSERT_TRUE(t1.ok() && t2.ok());
  queue_->Abandon(*t1, n);
  EXPECT_NE(queue_->Find(t1->job_id), nullptr);  // t2 still waits
  queue_->Abandon(*t2, n);
  EXPECT_EQ(queue_->Find(t1->job_id), nullptr);
  EXPECT_EQ(Stored(t1->job_id).state, cache::JobState::kCancelled);

  auto detached = queue_->Submit(
      Spec("b"), absl::InfiniteFuture(), true, [](const JobOutcome&) {}, n);
  ASSERT_TRUE(detached.ok());
  queue_->Abandon(*detached, n);
  EXPECT_NE(queue_->Find(detached->job_id), nullptr);
  n.Run();
}

TEST_F(JobQueueTest, CancelEndsALiveJobAndLeavesAFinishedOne) {
  std::string id = Submit(Spec("a"));
  Notifications n;
  std::string task = queue_->Start(id, "w1", n);
  EXPECT_EQ(queue_->Cancel(id, n).value(), v1::CANCELLED);
  EXPECT_THAT(ended_, ElementsAre(std::make_pair(id, task)));
  EXPECT_EQ(queue_->Cancel(id, n).value(), v1::CANCELLED);

  std::string done = Submit(Spec("b"));
  queue_->Finish(done, absl::InternalError("boom"), {}, n);
  EXPECT_EQ(queue_->Cancel(done, n).value(), v1::FAILED);
  EXPECT_EQ(queue_->Cancel("nope", n).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobQueueTest, RecordFinishedPersistsADoneJobWithItsId) {
  auto id = queue_->RecordFinished(
      Spec("hit"), [](const std::string& job_id) { return Result("hit of " + job_id); });
  ASSERT_TRUE(id.ok()) << id.status();
  cache::JobRecord record = Stored(*id);
  EXPECT_EQ(record.state, cache::JobState::kSucceeded);
  EXPECT_EQ(record.result, "hit of " + *id);
  EXPECT_EQ(queue_->Find(*id), nullptr);
}

TEST_F(JobQueueTest, PersistAllForRestartThenRestoreResumesInStoredPriorityOrder) {
  Recorder waiter;
  std::string batch = Submit(Spec("batch", v1::BATCH));
  std::string interactive = Submit(Spec("interactive"), &waiter, false);
  Notifications n;
  std::string task = queue_->Start(interactive, "w1", n);
  queue_->PersistAllForRestart(n);
  n.Run();
  ASSERT_EQ(waiter.outcomes.size(), 1u);
  EXPECT_EQ(waiter.outcomes[0].status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(ended_, ::testing::Contains(std::make_pair(interactive, task)));
  EXPECT_EQ(queue_->queued() + queue_->running(), 0);
  EXPECT_EQ(Stored(interactive).state, cache::JobState::kQueued);

  queue_ = MakeQueue();  // "restart"
  auto live = storage_->JobsInState(cache::JobState::kQueued);
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 2u);
  for (const cache::JobRecord& record : *live) {
    ASSERT_TRUE(queue_->Restore(record, Spec(record.id == batch ? "batch" : "interactive")).ok());
  }
  EXPECT_THAT(queue_->QueuedInOrder(), ElementsAre(interactive, batch));
  EXPECT_EQ(queue_->Find(interactive)->attempts, 1);

  // A second record for a key already restored is a duplicate: cancelled in storage.
  cache::JobRecord duplicate = (*live)[0];
  duplicate.id = "j-duplicate";
  ASSERT_TRUE(storage_->CreateJob(duplicate).ok());
  ASSERT_TRUE(queue_->Restore(duplicate, Spec("interactive")).ok());
  EXPECT_EQ(Stored("j-duplicate").state, cache::JobState::kCancelled);
  EXPECT_EQ(queue_->QueuedInOrder().size(), 2u);
}

}  // namespace
}  // namespace kiln::server
