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

// A plan is what a channel shows; its text is readable on any channel.
func ExampleBuildPlan() {
	req, _ := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"size","header":"Size","question":"Which size?","options":[{"label":"Small"},{"label":"Large","description":"Costs more"}]}]}`))
	plan := askbridge.BuildPlan("order-7", req, askbridge.Capabilities{})
	fmt.Println(plan.Text())
	// Output:
	// Question for you:
	//
	// [Size] Which size?
	//   1. Small
	//   2. Large — Costs more
	//
	// Something else? Reply in your own words.
	// Reply with the number or label of your choice. Reply "skip" to skip.
}
