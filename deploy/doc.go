// Package deploy holds the files that run askbridge outside a developer's
// shell, and the tests that keep them honest. It has no code of its own.
//
//   - compose/: what docker-compose.yml (at the repository's root) mounts
//     in place of a secret or configuration file that is not given.
//   - kubernetes/: a Deployment of two replicas, its Service,
//     PodDisruptionBudget and ServiceMonitor, and in kubernetes/example/ a
//     Secret with placeholders to copy.
//   - grafana/askbridge.json: a dashboard of the bridge's metrics.
//   - slack/: Slack app manifests for socket and HTTP mode.
//
// The tests load each file the way its consumer does: docker-compose.yml
// and the Dockerfile, the Kubernetes manifests strictly decoded into the
// Kubernetes API types, the dashboard as JSON with its PromQL checked
// against the bridge's metric names. Every setting they name must be one of
// config/table.go's. docs/deployment.md tells how to use them.
package deploy
