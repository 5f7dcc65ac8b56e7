// The worker stream. Incoming messages are handled on the executor one at a time (the next read
// starts after the previous message was handled), so registration always precedes results.
// Outgoing messages queue in a StreamChannel, which outlives the reactor and drops messages once
// the stream is finished.
#include "server/worker_hub.h"

#include <deque>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/blob_streams.h"
#include "server/compile_handler.h"
#include "server/log.h"
#include "server/rpc_auth.h"
#include "server/rpc_call.h"
#include "wire/status.h"

namespace kiln::server {
namespace {

using ConnectReactorBase = grpc::ServerBidiReactor<v1::WorkerMessage, v1::HubMessage>;

/// The state of one worker stream, shared by its reactor, the executor work pending for it and
/// the scheduler (as its WorkerChannel). The reactor may be gone (after Finish) while the rest
/// still hold it; every reactor operation checks `reactor_` under `mu_` first.
class WorkerConn final : public WorkerChannel, public std::enable_shared_from_this<WorkerConn> {
 public:
  WorkerConn(ServiceContext* ctx, std::string peer) : ctx_(ctx), peer_(std::move(peer)) {}

  void Attach(ConnectReactorBase* reactor) {
    std::lock_guard<std::mutex> lock(mu_);
    reactor_ = reactor;
    reactor_->StartRead(&in_);
  }

  // ---- WorkerChannel ----
  void SendTask(const v1::WorkerTask& task) override {
    v1::HubMessage m;
    *m.mutable_task() = task;
    Send(std::move(m));
  }
  void SendCancel(const std::string& task_id) override {
    v1::HubMessage m;
    m.mutable_cancel()->set_task_id(task_id);
    Send(std::move(m));
  }
  void Close(const absl::Status& why) override { FinishStream(why); }

  // ---- Reactions ----
  void ReadDone(bool ok) {
    auto self = shared_from_this();
    if (!ok) {
      // The worker closed its side, died, or the call was cancelled.
      ctx_->executor->Post(
          [self] { self->Disconnected(absl::UnavailableError("connection closed")); });
      return;
    }
    ctx_->executor->Post([self] { self->Handle(); });
  }

  void WriteDone(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      queue_.clear();  // the stream is broken; the failed read finishes it
      return;
    }
    Pump();
  }

  void Done() { RecordRpc(ctx_->metrics, "Connect", final_status_, start_, peer_); }

 private:
  void Send(v1::HubMessage message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (reactor_ == nullptr) return;
    queue_.push_back(std::move(message));
    Pump();
  }

  void Pump() {
    if (reactor_ == nullptr || writing_ || registering_ || queue_.empty()) return;
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
  }

  void FinishStream(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (reactor_ == nullptr) return;
    final_status_ = status;
    ConnectReactorBase* reactor = reactor_;
    reactor_ = nullptr;
    reactor->Finish(wire::ToGrpcStatus(status));
  }

  void Handle() {
    v1::WorkerMessage message;
    {
      std::lock_guard<std::mutex> lock(mu_);
      message = std::move(in_);
      in_.Clear();
    }
    switch (message.msg_case()) {
      case v1::WorkerMessage::kRegister: {
        if (!worker_id_.empty()) {
          return Fail(absl::FailedPreconditionError("worker registered twice on one stream"));
        }
        v1::Worker info = message.register_();
        info.set_address(peer_);
        if (ctx_->is_local_worker && info.pid() > 0 && ctx_->is_local_worker(info.pid())) {
          info.set_local(true);
        }
        // Registered must be the first message the worker gets, but its id comes from
        // AddWorker, which may already hand the worker a task: hold writes until it is queued.
        {
          std::lock_guard<std::mutex> lock(mu_);
          registering_ = true;
        }
        worker_id_ = ctx_->scheduler->AddWorker(info, shared_from_this());
        v1::HubMessage reply;
        reply.mutable_registered()->set_worker_id(worker_id_);
        reply.mutable_registered()->set_heartbeat_interval_ms(
            absl::ToInt64Milliseconds(ctx_->limits.heartbeat_interval));
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (reactor_ != nullptr) {
            // Anything queued meanwhile (a task) goes after Registered; nothing was written yet.
            queue_.push_front(std::move(reply));
            registering_ = false;
            Pump();
          }
        }
        break;
      }
      case v1::WorkerMessage::kHeartbeat:
        if (worker_id_.empty()) return NotRegistered();
        ctx_->scheduler->Heartbeat(worker_id_, message.heartbeat().busy());
        break;
      case v1::WorkerMessage::kResult: {
        if (worker_id_.empty()) return NotRegistered();
        v1::TaskResult& result = *message.mutable_result();
        if (result.has_compile() && result.error_code() == 0) {
          // Here, on the executor: the check reads the whole artifact.
          absl::Status checked = CheckUploadedArtifact(ctx_->storage, result.compile());
          if (!checked.ok()) {
            LogError("artifact.refused",
                     {{"worker", worker_id_}, {"task", result.task_id()}, {"status", checked}});
            result.set_error_code(static_cast<int32_t>(checked.code()));
            result.set_error_message(std::string(checked.message()));
          }
        }
        ctx_->scheduler->TaskDone(worker_id_, result);
        break;
      }
      default:
        return Fail(absl::InvalidArgumentError("empty WorkerMessage"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (reactor_ != nullptr) reactor_->StartRead(&in_);
  }

  void NotRegistered() {
    Fail(absl::FailedPreconditionError("the first message on Connect must be `register`"));
  }

  void Fail(const absl::Status& status) {
    LogWarning("worker.protocol_error", {{"peer", peer_}, {"status", status}});
    Disconnected(status);
  }

  void Disconnected(const absl::Status& why) {
    if (!worker_id_.empty()) ctx_->scheduler->RemoveWorker(worker_id_, why);
    FinishStream(absl::IsUnavailable(why) ? absl::OkStatus() : why);
  }

  ServiceContext* ctx_;
  const std::string peer_;
  const absl::Time start_ = absl::Now();
  std::mutex mu_;
  ConnectReactorBase* reactor_ = nullptr;  // null once Finish was called
  std::deque<v1::HubMessage> queue_;       // front is in flight while writing_
  bool writing_ = false;
  bool registering_ = false;
  v1::WorkerMessage in_;
  std::string worker_id_;  // set on the executor only (messages are handled one at a time)
  absl::Status final_status_;
};

class ConnectReactor final : public ConnectReactorBase {
 public:
  explicit ConnectReactor(std::shared_ptr<WorkerConn> conn) : conn_(std::move(conn)) {}
  void OnReadDone(bool ok) override { conn_->ReadDone(ok); }
  void OnWriteDone(bool ok) override { conn_->WriteDone(ok); }
  void OnDone() override {
    conn_->Done();
    delete this;
  }

 private:
  std::shared_ptr<WorkerConn> conn_;
};

}  // namespace

grpc::ServerBidiReactor<v1::WorkerMessage, v1::HubMessage>* WorkerHubImpl::Connect(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kWorker, "Connect");
  if (!who.ok()) {
    return new RefusedStream<ConnectReactorBase>(ctx_, *context, who.status(), "Connect");
  }
  auto conn = std::make_shared<WorkerConn>(ctx_, context->peer());
  auto* reactor = new ConnectReactor(conn);
  conn->Attach(reactor);
  return reactor;
}

grpc::ServerWriteReactor<v1::FetchArtifactResponse>* WorkerHubImpl::FetchModel(
    grpc::CallbackServerContext* context, const v1::FetchModelRequest* request) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kWorker, "FetchModel");
  if (!who.ok()) {
    return new RefusedStream<grpc::ServerWriteReactor<v1::FetchArtifactResponse>>(
        ctx_, *context, who.status(), "FetchModel");
  }
  return StartBlobFetch(ctx_, context, request->digest().hash(), "FetchModel");
}

grpc::ServerReadReactor<v1::UploadArtifactRequest>* WorkerHubImpl::UploadArtifact(
    grpc::CallbackServerContext* context, v1::UploadArtifactResponse* response) {
  absl::StatusOr<auth::Principal> who =
      AuthorizeCall(ctx_, *context, method_roles::kWorker, "UploadArtifact");
  if (!who.ok()) {
    return new RefusedStream<grpc::ServerReadReactor<v1::UploadArtifactRequest>>(
        ctx_, *context, who.status(), "UploadArtifact");
  }
  return StartArtifactUpload(ctx_, context, response);
}

}  // namespace kiln::server
