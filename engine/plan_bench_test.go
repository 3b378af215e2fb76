package engine

import (
	"testing"

	"github.com/askbridge/askbridge"
)

func BenchmarkBuildPlan(b *testing.B) {
	req, err := askbridge.DecodeRequest([]byte(validRequest))
	if err != nil {
		b.Fatal(err)
	}
	req.Agent = "deploy-bot"
	caps := Capabilities{Buttons: true, ButtonsPerRow: 1, PayloadBytes: 64}
	b.ReportAllocs()
	for b.Loop() {
		_ = BuildPlan("q-1", req, caps)
	}
}
