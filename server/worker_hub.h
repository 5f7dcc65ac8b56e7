// WorkerHub: the endpoint kiln-worker processes connect to. Connect is a bidirectional stream
// (register, heartbeats and results in; tasks and cancels out) bridged to the Scheduler through
// a WorkerChannel; FetchModel and UploadArtifact move the blobs of a task.
#ifndef KILN_SERVER_WORKER_HUB_H_
#define KILN_SERVER_WORKER_HUB_H_

#include "kiln/v1/service.grpc.pb.h"
#include "server/service_context.h"

namespace kiln::server {

class WorkerHubImpl final : public v1::WorkerHub::CallbackService {
 public:
  /// `ctx` must outlive the service.
  explicit WorkerHubImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::HubMessage>* Connect(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::FetchArtifactResponse>* FetchModel(
      grpc::CallbackServerContext* context, const v1::FetchModelRequest* request) override;
  grpc::ServerReadReactor<v1::UploadArtifactRequest>* UploadArtifact(
      grpc::CallbackServerContext* context, v1::UploadArtifactResponse* response) override;

 private:
  ServiceContext* ctx_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_HUB_H_
