package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxCooldown bounds a cooldown shared or heard: a broken Retry-After must
// not silence a platform for longer.
const MaxCooldown = time.Hour

// ShareCooldown tells the other replicas that platform limited bucket for
// d (a 429's Retry-After), so they hold back their own calls to it instead
// of running into the limit in turn. It is one PUBLISH on the channel
// <prefix>cooldowns: nothing is read per call the platforms get, and no key
// is left behind. A replica that is not listening at that moment (it is
// starting, or reconnecting) learns of the limit from its own first 429.
// The message carries d rather than a time, so replicas' clocks need not
// agree. This Store does not hear its own cooldowns.
func (s *Store) ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error {
	if platform == "" || strings.ContainsAny(platform, " \n") {
		return fmt.Errorf("store: share cooldown: invalid platform %q", platform)
	}
	d = min(max(d, 0), MaxCooldown)
	msg := s.origin() + " " + platform + " " + strconv.FormatInt(d.Milliseconds(), 10) + " " + bucket
	if err := s.rdb.Publish(ctx, s.k.cooldowns(), msg).Err(); err != nil {
		return fmt.Errorf("store: share cooldown: %w", err)
	}
	return nil
}

// Cooldowns calls fn with each cooldown another replica shares for
// platform, as it comes, until ctx is done. The subscription survives
// connection losses (go-redis subscribes again); what is shared while it
// is down is missed. fn runs on one goroutine. On a Redis Cluster two
// shares may arrive in another order than they were made.
func (s *Store) Cooldowns(ctx context.Context, platform string, fn func(bucket string, d time.Duration)) error {
	sub := s.rdb.Subscribe(ctx, s.k.cooldowns())
	defer sub.Close()
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			origin, p, d, bucket, ok := parseCooldown(m.Payload)
			if !ok || origin == s.origin() || p != platform {
				continue
			}
			fn(bucket, d)
		}
	}
}

// parseCooldown reads "<origin> <platform> <ms> <bucket>"; the bucket may
// hold spaces.
func parseCooldown(msg string) (origin, platform string, d time.Duration, bucket string, ok bool) {
	f := strings.SplitN(msg, " ", 4)
	if len(f) != 4 {
		return "", "", 0, "", false
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return "", "", 0, "", false
	}
	return f[0], f[1], min(time.Duration(n)*time.Millisecond, MaxCooldown), f[3], true
}

// origin names this Store in the cooldowns it shares, so it skips its own.
func (s *Store) origin() string {
	s.originOnce.Do(func() {
		var b [9]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		s.originID = base64.RawURLEncoding.EncodeToString(b[:])
	})
	return s.originID
}
