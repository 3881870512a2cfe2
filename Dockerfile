# Builds the k1s binary in a container (the image only carries the binary:
# run it on a host, or in a privileged container with /var/lib/k1s mounted).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates iptables runc containernetworking-plugins \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/k1s /usr/local/bin/k1s
VOLUME /var/lib/k1s
EXPOSE 6443
ENTRYPOINT ["/usr/local/bin/k1s"]
CMD ["server"]
