// WatchJob reactor. Scheduler callbacks may arrive after the client left, so they go through a
// shared WatchState that outlives the reactor and drops events once the stream is finished.
#include "server/watch_reactor.h"

#include <deque>
#include <memory>
#include <mutex>

#include "server/rpc_auth.h"
#include "server/rpc_call.h"
#include "wire/status.h"

namespace kiln::server {
namespace {

class WatchReactor;

struct WatchState {
  std::mutex mu;
  WatchReactor* reactor = nullptr;  // null once Finish was called
  std::deque<v1::JobEvent> queue;   // front is being written while `writing`
  bool writing = false;
  bool finish_after_queue = false;
  bool cancelled = false;  // OnCancel ran: the stream finishes once no write is in flight
  std::string job_id;
  uint64_t watch_id = 0;
  auth::Principal principal;
};

class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  WatchReactor(ServiceContext* ctx, grpc::CallbackServerContext* context, std::string job_id,
               auth::Principal principal)
      : ctx_(ctx), peer_(context->peer()), state_(std::make_shared<WatchState>()) {
    state_->reactor = this;
    state_->job_id = std::move(job_id);
    state_->principal = std::move(principal);
    std::shared_ptr<WatchState> state = state_;
    ctx_->executor->Post([ctx, state] { Subscribe(ctx, state); });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->writing = false;
    if (!state_->queue.empty()) state_->queue.pop_front();
    // A write that completed as the call was cancelled reports ok: the cancellation still
    // finishes the stream, here, since OnCancel left it to the write in flight.
    if (!ok || state_->cancelled) {
      return FinishLocked(*state_, absl::CancelledError("the client went away"));
    }
    Pump(*state_);
  }

  void OnCancel() override {
    ctx_->scheduler->Unwatch(state_->job_id, state_->watch_id);
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->cancelled = true;
    // With a write in flight, its completion finishes the stream (OnWriteDone), whether the
    // write failed or got out just before the cancellation.
    if (!state_->writing) FinishLocked(*state_, absl::CancelledError("the client went away"));
  }

  void OnDone() override { delete this; }

  /// Queues an event; `last` finishes the stream once everything queued was written.
  static void Push(WatchState& state, const v1::JobEvent& event, bool last) {
    std::lock_guard<std::mutex> lock(state.mu);
    if (state.reactor == nullptr) return;
    state.queue.push_back(event);
    if (last) state.finish_after_queue = true;
    Pump(state);
  }

  static void FinishWith(WatchState& state, const absl::Status& status) {
    std::lock_guard<std::mutex> lock(state.mu);
    FinishLocked(state, status);
  }

 private:
  static void Subscribe(ServiceContext* ctx, std::shared_ptr<WatchState> state) {
    if (!state->principal.Has(auth::kAdmin)) {
      absl::StatusOr<cache::JobRecord> job = ctx->storage->GetJob(state->job_id);
      if (job.ok() && !MayAccessJob(state->principal, *job)) {
        return FinishWith(*state, NotYourJob(state->principal, state->job_id));
      }
    }
    uint64_t watch_id = 0;
    bool last = false;
    std::weak_ptr<WatchState> weak = state;
    absl::StatusOr<v1::JobEvent> first = ctx->scheduler->Watch(
        state->job_id,
        [weak](const v1::JobEvent& event, bool is_last) {
          if (auto s = weak.lock()) Push(*s, event, is_last);
        },
        &watch_id, &last);
    if (!first.ok()) return FinishWith(*state, first.status());
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->watch_id = watch_id;
      // The first event goes before anything the callback may have queued meanwhile.
      if (state->reactor != nullptr) {
        state->queue.push_front(*first);
        if (last) state->finish_after_queue = true;
        Pump(*state);
        return;
      }
    }
    ctx->scheduler->Unwatch(state->job_id, watch_id);  // the client left already
  }

  static void Pump(WatchState& state) {
    if (state.reactor == nullptr || state.writing) return;
    if (!state.queue.empty()) {
      state.writing = true;
      state.reactor->StartWrite(&state.queue.front());
      return;
    }
    if (state.finish_after_queue) FinishLocked(state, absl::OkStatus());
  }

  static void FinishLocked(WatchState& state, const absl::Status& status) {
    WatchReactor* reactor = state.reactor;
    if (reactor == nullptr) return;
    state.reactor = nullptr;
    RecordRpc(reactor->ctx_->metrics, "WatchJob", status, reactor->start_, reactor->peer_);
    reactor->Finish(wire::ToGrpcStatus(status));
  }

  ServiceContext* ctx_;
  const std::string peer_;
  const absl::Time start_ = absl::Now();
  std::shared_ptr<WatchState> state_;
};

}  // namespace

grpc::ServerWriteReactor<v1::JobEvent>* StartWatch(ServiceContext* ctx,
                                                   grpc::CallbackServerContext* context,
                                                   const std::string& job_id,
                                                   auth::Principal principal) {
  return new WatchReactor(ctx, context, job_id, std::move(principal));
}

}  // namespace kiln::server
