package engine

// validRequest is a well-formed one-question request.
const validRequest = `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// withQuestion builds a one-question request around a question object.
func withQuestion(q string) string {
	return `{"questions":[` + q + `]}`
}
