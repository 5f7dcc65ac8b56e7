// WorkerRegistry on its own (no scheduler, no job kinds): ids and slots, placement (least
// loaded, capabilities, cooldown), heartbeats, and lost tasks retried once per job.
#include "server/worker_registry.h"

#include <memory>
#include <mutex>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::ElementsAre;

class NullChannel final : public WorkerChannel {
 public:
  void SendTask(const v1::WorkerTask&) override {}
  void SendCancel(const std::string&) override {}
  void Close(const absl::Status&) override {}
};

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

v1::Worker CompileWorker(int slots) {
  v1::Worker info;
  info.set_slots(slots);
  info.mutable_capabilities()->add_capabilities()->mutable_compile()->add_target_kinds("cpu");
  return info;
}

v1::Worker MeasureWorker(const std::string& device_kind) {
  v1::Worker info;
  info.set_slots(1);
  info.mutable_capabilities()->add_capabilities()->mutable_measure()->set_device_kind(device_kind);
  return info;
}

bool Anyone(const v1::WorkerCapabilities&) { return true; }

TaskEntry Task(const std::string& task_id, const std::string& job_id,
               const std::string& worker_id) {
  return TaskEntry{task_id, job_id, worker_id, JobSpec{}};
}

class WorkerRegistryTest : public ::testing::Test {
 protected:
  std::string Add(v1::Worker info) {
    return registry_.Add(std::move(info), std::make_shared<NullChannel>(), kT0);
  }
  WorkerRegistry registry_{/*max_losses=*/2};
};

TEST_F(WorkerRegistryTest, AddAssignsIdsAndAtLeastOneSlot) {
  EXPECT_EQ(Add(CompileWorker(0)), "w1");
  EXPECT_EQ(Add(CompileWorker(3)), "w2");
  EXPECT_EQ(registry_.size(), 2u);
  std::vector<v1::Worker> listed = registry_.List();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id(), "w1");
  EXPECT_EQ(listed[0].slots(), 1);
  EXPECT_EQ(listed[1].slots(), 3);
  EXPECT_TRUE(listed[1].capabilities().capabilities(0).has_compile());
  EXPECT_NE(registry_.Channel("w1"), nullptr);
  EXPECT_EQ(registry_.Channel("w9"), nullptr);
  EXPECT_EQ(registry_.Find("w9"), nullptr);
}

TEST_F(WorkerRegistryTest, PickTakesTheLeastLoadedFreeWorkerThatCanRunIt) {
  std::string a = Add(CompileWorker(2));
  std::string b = Add(CompileWorker(1));
  EXPECT_EQ(registry_.Pick("j1", kT0, Anyone), a);  // a tie goes to the first
  registry_.StartTask(Task("t1", "j1", a));
  EXPECT_EQ(registry_.Pick("j2", kT0, Anyone), b);
  registry_.StartTask(Task("t2", "j2", b));
  EXPECT_EQ(registry_.Pick("j3", kT0, Anyone), a);  // b is full
  registry_.StartTask(Task("t3", "j3", a));
  EXPECT_EQ(registry_.Pick("j4", kT0, Anyone), std::nullopt);
  EXPECT_EQ(registry_.List()[0].busy(), 2);

  ASSERT_TRUE(registry_.EndTask(b, "t2").has_value());
  EXPECT_EQ(registry_.Pick("j4", kT0, Anyone), b);
  EXPECT_EQ(registry_.EndTask(b, "t2"), std::nullopt);  // reported twice
}

TEST_F(WorkerRegistryTest, PickAsksTheCapabilitiesPredicate) {
  std::string gpu = Add(MeasureWorker("cuda"));
  std::string cpu = Add(MeasureWorker("cpu"));
  auto wants = [](const std::string& kind) {
    return [kind](const v1::WorkerCapabilities& c) {
      return c.capabilities_size() > 0 && c.capabilities(0).measure().device_kind() == kind;
    };
  };
  EXPECT_EQ(registry_.Pick("j", kT0, wants("cpu")), cpu);
  EXPECT_EQ(registry_.Pick("j", kT0, wants("cuda")), gpu);
  EXPECT_EQ(registry_.Pick("j", kT0, wants("rocm")), std::nullopt);
}

TEST_F(WorkerRegistryTest, CooldownHoldsTasksBackUntilItEnds) {
  std::string w = Add(CompileWorker(1));
  registry_.CoolDown(w, kT0 + absl::Milliseconds(100));
  EXPECT_EQ(registry_.Pick("j", kT0, Anyone), std::nullopt);
  EXPECT_EQ(registry_.Pick("j", kT0 + absl::Milliseconds(101), Anyone), w);
}

TEST_F(WorkerRegistryTest, SilentWorkersAreThoseNotSeenWithinTheTimeout) {
  std::string a = Add(CompileWorker(1));
  std::string b = Add(CompileWorker(1));
  registry_.Touch(b, kT0 + absl::Seconds(10), /*busy=*/1);
  EXPECT_THAT(registry_.Silent(kT0 + absl::Seconds(16), absl::Seconds(15)), ElementsAre(a));
  EXPECT_TRUE(registry_.Silent(kT0 + absl::Seconds(15), absl::Seconds(15)).empty());
  const v1::Worker* info = registry_.Find(b);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->busy(), 1);
  EXPECT_EQ(info->last_heartbeat_ms(), absl::ToUnixMillis(kT0 + absl::Seconds(10)));
}

TEST_F(WorkerRegistryTest, ALostJobIsRetriedOnceOnAnotherWorkerThenGivesUp) {
  std::string w1 = Add(CompileWorker(1));
  std::string w2 = Add(CompileWorker(1));
  registry_.StartTask(Task("j.1", "j", w1));
  registry_.StartTask(Task("k.1", "k", w2));

  std::vector<LostTask> lost = registry_.Remove(w1);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].task.task_id, "j.1");
  EXPECT_EQ(lost[0].task.worker_id, w1);
  EXPECT_TRUE(lost[0].retry);
  EXPECT_EQ(lost[0].losses, 1);
  EXPECT_EQ(registry_.size(), 1u);
  EXPECT_TRUE(registry_.Remove(w1).empty());  // already gone

  // The retry may not go back to a worker it was lost on; a restarted worker is a new one.
  ASSERT_TRUE(registry_.EndTask(w2, "k.1").has_value());
  std::string w3 = Add(CompileWorker(1));
  registry_.StartTask(Task("j.2", "j", w3));
  lost = registry_.Remove(w3);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_FALSE(lost[0].retry);
  EXPECT_EQ(lost[0].losses, 2);
}

TEST_F(WorkerRegistryTest, AnUnavailableResultCountsAsALossAndExcludesTheWorker) {
  std::string w1 = Add(CompileWorker(1));
  std::string w2 = Add(CompileWorker(1));
  registry_.StartTask(Task("j.1", "j", w1));
  std::optional<TaskEntry> ended = registry_.EndTask(w1, "j.1");
  ASSERT_TRUE(ended.has_value());
  LostTask lost = registry_.RecordLoss(*ended);
  EXPECT_TRUE(lost.retry);
  EXPECT_EQ(registry_.Pick("j", kT0, Anyone), w2);  // w1 is free, but the job was lost there
  EXPECT_EQ(registry_.Pick("other", kT0, Anyone), w1);
}

TEST_F(WorkerRegistryTest, ForgottenJobsAreNotCountedOrExcluded) {
  std::string w1 = Add(CompileWorker(2));
  registry_.StartTask(Task("j.1", "j", w1));
  registry_.ForgetJob("j");  // the job ended (e.g. cancelled) while its task ran
  std::vector<LostTask> lost = registry_.Remove(w1);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_FALSE(lost[0].retry);
  EXPECT_EQ(lost[0].losses, 0);
}

}  // namespace
}  // namespace kiln::server
