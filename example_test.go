package askbridge_test

import (
	"fmt"

	"github.com/askbridge/askbridge"
)

// Decoding a request normalises it: headers are cut to 12 characters, the
// timeout gets its default, and every problem names its field.
func ExampleDecodeRequest() {
	req, err := askbridge.DecodeRequest([]byte(`{
		"agent": "deploy-bot",
		"questions": [{
			"id": "deploy_target",
			"header": "Deployment target",
			"question": "Where should this deploy?",
			"options": [{"label": "Staging (Recommended)"}, {"label": "Production"}]
		}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Questions[0].Header, req.TimeoutSeconds)

	_, err = askbridge.DecodeRequest([]byte(`{"questions":[{"id":"Target","header":"T","question":"Where?","options":[{"label":"A"}]}],"timeoutSeconds":"60"}`))
	fmt.Println(err)
	// Output:
	// Deployment t 900
	// questions[0].id must be snake_case: a lowercase letter, then lowercase letters, digits or '_' (for example, deploy_target); questions[0].options must contain 2 to 4 options (got 1); timeoutSeconds must be an integer number of seconds
}
