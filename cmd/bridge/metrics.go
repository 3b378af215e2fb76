package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge"
)

// metrics implements askbridge.Metrics on Prometheus.
type metrics struct {
	ended      *prometheus.CounterVec
	openFor    *prometheus.HistogramVec
	sent       *prometheus.CounterVec
	errors     *prometheus.CounterVec
	retryAfter *prometheus.CounterVec
	panics     *prometheus.CounterVec
	waited     *prometheus.CounterVec
	reached    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, pending pendingCounter) *metrics {
	m := &metrics{
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_questions_ended_total",
			Help: "Questions ended by this replica, by platform and outcome (answered, skipped, expired, cancelled, undeliverable, rejected).",
		}, []string{"platform", "outcome"}),
		openFor: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_time_to_answer_seconds",
			Help:    "Time from request to answer of answered questions, by platform.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600},
		}, []string{"platform"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_messages_sent_total",
			Help: "Prompt messages posted, by platform.",
		}, []string{"platform"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_platform_errors_total",
			Help: "Platform calls refused, by platform and kind (temporary, rate_limited, permanent).",
		}, []string{"platform", "kind"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_panics_total",
			Help: "Panics recovered in the engine, by operation; each is logged with its stack.",
		}, []string{"op"}),
		retryAfter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_retry_after_total",
			Help: "Rate limits imposed by a platform (retry-after), by platform.",
		}, []string{"platform"}),
		waited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_retry_after_seconds_total",
			Help: "Seconds waited because a platform asked to retry later, by platform.",
		}, []string{"platform"}),
		reached: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_reach_total",
			Help: "Reminders posted, escalation steps shown, Seen pressed, and places that could not be reached while the question stayed open elsewhere, per place, by event (reminded, escalated, acknowledged, undeliverable) and platform.",
		}, []string{"event", "platform"}),
	}
	reg.MustRegister(m.ended, m.openFor, m.sent, m.errors, m.retryAfter, m.panics, m.waited, m.reached, pendingCollector{store: pending})
	return m
}

func (m *metrics) Ended(platform string, outcome askbridge.Outcome, open time.Duration) {
	m.ended.WithLabelValues(platform, string(outcome)).Inc()
	if outcome == askbridge.OutcomeAnswered {
		m.openFor.WithLabelValues(platform).Observe(open.Seconds())
	}
}

func (m *metrics) Sent(platform string, messages int) {
	m.sent.WithLabelValues(platform).Add(float64(messages))
}

func (m *metrics) PlatformError(platform string, kind askbridge.ErrorKind) {
	name := "temporary"
	switch kind {
	case askbridge.RateLimited:
		name = "rate_limited"
	case askbridge.Permanent:
		name = "permanent"
	}
	m.errors.WithLabelValues(platform, name).Inc()
}

func (m *metrics) Panicked(op string) { m.panics.WithLabelValues(op).Inc() }

func (m *metrics) Reached(kind askbridge.EventKind, platform string) {
	m.reached.WithLabelValues(string(kind), platform).Inc()
}

func (m *metrics) RetryAfter(platform string, wait time.Duration) {
	m.retryAfter.WithLabelValues(platform).Inc()
	m.waited.WithLabelValues(platform).Add(wait.Seconds())
}

// pendingCollector reads the number of pending questions from Redis at
// scrape time, so every replica reports the shared number.
type pendingCollector struct {
	store pendingCounter
}

// pendingCounter counts the pending questions in O(1). *store.Store
// implements it.
type pendingCounter interface {
	Pending(ctx context.Context) (int64, error)
}

var pendingDesc = prometheus.NewDesc("askbridge_questions_pending", "Questions waiting for an answer, across all replicas.", nil, nil)

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pendingDesc }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.store.Pending(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
}
