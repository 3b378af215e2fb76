package askbridge

import (
	"slices"
	"testing"
)

func TestNumberLegacyParts(t *testing.T) {
	ref := func(platform, msg string, part int) MessageRef {
		return MessageRef{Platform: platform, Chat: "c", Message: msg, Part: part}
	}
	for _, tc := range []struct {
		name     string
		in, want []MessageRef
	}{
		{"recorded with parts",
			[]MessageRef{ref("telegram", "1", 0), ref("telegram", "2", 1), ref("telegram", "3", PartReplyBox)},
			[]MessageRef{ref("telegram", "1", 0), ref("telegram", "2", 1), ref("telegram", "3", PartReplyBox)}},
		{"recorded without parts",
			[]MessageRef{ref("slack", "1", 0), ref("slack", "2", 0), ref("slack", "3", 0)},
			[]MessageRef{ref("slack", "1", 0), ref("slack", "2", 1), ref("slack", "3", 2)}},
		{"one part per platform",
			[]MessageRef{ref("web", "q", 0), ref("telegram", "1", 0)},
			[]MessageRef{ref("web", "q", 0), ref("telegram", "1", 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := numberLegacyParts(tc.in); !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
