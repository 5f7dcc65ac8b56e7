# A Prometheus image for tests/deploy/run where no registry is reachable: Debian 12's
# prometheus binary (from the host's `prometheus` package, copied into the build context) on
# the locally made Debian 12 base, laid out like prom/prometheus (entrypoint, /prometheus as
# the data directory, user nobody), so deploy/compose.yaml runs it as it runs the real one.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
COPY prometheus /bin/prometheus
RUN install -d -o nobody -g nogroup /prometheus /etc/prometheus
USER nobody
WORKDIR /prometheus
VOLUME ["/prometheus"]
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
