package engine_test

import (
	"fmt"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// A plan is what a channel shows; its text is readable on any channel.
func ExampleBuildPlan() {
	req, _ := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"size","header":"Size","question":"Which size?","options":[{"label":"Small"},{"label":"Large","description":"Costs more"}]}]}`))
	plan := engine.BuildPlan("order-7", req, engine.Capabilities{})
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
