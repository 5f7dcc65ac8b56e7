// KilnService: the client API (upload, compile, fetch, jobs, workers, stats) over the callback
// API. Reactors only validate cheap fields and hand everything else to the executor.
#ifndef KILN_SERVER_SERVICE_H_
#define KILN_SERVER_SERVICE_H_

#include "kiln/v1/service.grpc.pb.h"
#include "server/service_context.h"

namespace kiln::server {

class KilnServiceImpl final : public v1::KilnService::CallbackService {
 public:
  /// `ctx` must outlive the service.
  explicit KilnServiceImpl(ServiceContext* ctx) : ctx_(ctx) {}

  grpc::ServerUnaryReactor* FindMissingBlobs(grpc::CallbackServerContext* context,
                                             const v1::FindMissingBlobsRequest* request,
                                             v1::FindMissingBlobsResponse* response) override;
  grpc::ServerReadReactor<v1::UploadModelRequest>* UploadModel(
      grpc::CallbackServerContext* context, v1::UploadModelResponse* response) override;
  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const v1::CompileRequest* request,
                                    v1::CompileResponse* response) override;
  grpc::ServerWriteReactor<v1::FetchArtifactResponse>* FetchArtifact(
      grpc::CallbackServerContext* context, const v1::FetchArtifactRequest* request) override;
  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const v1::SubmitJobRequest* request,
                                      v1::SubmitJobResponse* response) override;
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJob(grpc::CallbackServerContext* context,
                                                   const v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const v1::CancelJobRequest* request,
                                      v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::GetStatsResponse* response) override;
  grpc::ServerUnaryReactor* ListTuningRecords(grpc::CallbackServerContext* context,
                                              const v1::ListTuningRecordsRequest* request,
                                              v1::ListTuningRecordsResponse* response) override;
  grpc::ServerUnaryReactor* ImportTuningRecords(grpc::CallbackServerContext* context,
                                                const v1::ImportTuningRecordsRequest* request,
                                                v1::ImportTuningRecordsResponse* response) override;

 private:
  ServiceContext* ctx_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_SERVICE_H_
