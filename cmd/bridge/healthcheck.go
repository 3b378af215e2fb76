package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/askbridge/askbridge/config"
)

// healthcheck asks the local bridge's /healthz, for container health checks
// in images that have no curl.
func healthcheck(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	addr := getenv("ASKUSER_HTTP_ADDR")
	if addr == "" {
		addr = config.DefaultHTTPAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge healthcheck: ASKUSER_HTTP_ADDR %q: %v\n", addr, err)
		return 1
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge healthcheck: %v\n", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "askbridge healthcheck: /healthz answered %s\n", resp.Status)
		return 1
	}
	return 0
}
