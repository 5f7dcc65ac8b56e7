// Helpers for callback-API RPCs: RPC accounting (one log line and metrics per finished RPC) and
// UnaryCall, a unary reactor that may be finished from any thread exactly once and that tells
// its owner when the client goes away.
#ifndef KILN_SERVER_RPC_CALL_H_
#define KILN_SERVER_RPC_CALL_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics_hooks.h"
#include "wire/status.h"

namespace kiln::server {

/// Logs `event=rpc method=M code=C ms=T [error=...]` and reports it to `metrics`.
void RecordRpc(MetricsHooks* metrics, const std::string& method, const absl::Status& status,
               absl::Time start, const std::string& peer);

/// A unary RPC in flight. Owned jointly (shared_ptr) by its reactor and by whatever work is
/// pending for it, so a reply that arrives after the client left is dropped safely.
template <typename Response>
class UnaryCall : public std::enable_shared_from_this<UnaryCall<Response>> {
 public:
  /// Creates the call and its reactor; return `reactor()` from the service method.
  static std::shared_ptr<UnaryCall> Start(grpc::CallbackServerContext* context, Response* response,
                                          std::string method, MetricsHooks* metrics) {
    auto call = std::shared_ptr<UnaryCall>(
        new UnaryCall(response, std::move(method), metrics, context->peer()));
    call->reactor_ = new Reactor(call);
    return call;
  }

  grpc::ServerUnaryReactor* reactor() const { return reactor_; }
  absl::Time start() const { return start_; }

  /// Finishes the call: with OK after `fill` wrote the response, or with `status`. Only the
  /// first reply counts; returns false if the call was already finished (e.g. cancelled).
  bool Reply(const absl::Status& status, const std::function<void(Response&)>& fill = nullptr) {
    auto self = this->shared_from_this();  // Finish may lead to OnDone dropping the reactor's ref
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return false;
    finished_ = true;
    if (status.ok() && fill) fill(*response_);
    RecordRpc(metrics_, method_, status, start_, peer_);
    reactor_->Finish(wire::ToGrpcStatus(status));
    return true;
  }

  /// Runs `fn` when the client cancels (or its deadline passes); at once if it already did.
  void OnClientGone(std::function<void()> fn) {
    bool run_now = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) {
        run_now = true;
      } else {
        on_gone_ = std::move(fn);
      }
    }
    if (run_now) fn();
  }

  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }

 private:
  class Reactor : public grpc::ServerUnaryReactor {
   public:
    explicit Reactor(std::shared_ptr<UnaryCall> call) : call_(std::move(call)) {}
    void OnCancel() override { call_->Cancelled(); }
    void OnDone() override { delete this; }

   private:
    std::shared_ptr<UnaryCall> call_;
  };

  UnaryCall(Response* response, std::string method, MetricsHooks* metrics, std::string peer)
      : response_(response),
        method_(std::move(method)),
        metrics_(metrics),
        peer_(std::move(peer)),
        start_(absl::Now()) {}

  void Cancelled() {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
      fn = std::move(on_gone_);
    }
    Reply(absl::CancelledError("the client cancelled the call or its deadline passed"));
    if (fn) fn();
  }

  std::mutex mu_;
  bool finished_ = false;
  bool cancelled_ = false;
  std::function<void()> on_gone_;
  Reactor* reactor_ = nullptr;  // valid until Finish; deleted by gRPC after OnDone
  Response* response_;          // owned by gRPC; valid until OnDone
  const std::string method_;
  MetricsHooks* metrics_;
  const std::string peer_;
  const absl::Time start_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_RPC_CALL_H_
