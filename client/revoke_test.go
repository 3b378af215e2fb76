package client_test

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// TestRevokeEntry: Revoke pushes one revoke entry of the protocol's shape
// (redis-protocol.md, v1.2), which the bridge's strict decoder reads back.
func TestRevokeEntry(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			prefix := testPrefix()
			rdb := b.client(t)
			c := client.New(rdb, client.Options{Prefix: prefix})
			ctx := ctxT(t, 10*time.Second)
			id, err := c.Revoke(ctx, "deploy-bot", "deploy:prod")
			if err != nil {
				t.Fatal(err)
			}
			msgs := rdb.XRange(ctx, prefix+"requests", "-", "+").Val()
			if len(msgs) != 1 || msgs[0].ID != id || len(msgs[0].Values) != 1 {
				t.Fatalf("requests stream = %+v; want the one revoke entry %s", msgs, id)
			}
			raw, _ := msgs[0].Values["revoke"].(string)
			r, err := askbridge.DecodeRevokeEntry([]byte(raw))
			if err != nil || r.Agent != "deploy-bot" || r.Key != "deploy:prod" {
				t.Errorf("revoke entry %q = %+v, %v", raw, r, err)
			}
		})
	}
}
