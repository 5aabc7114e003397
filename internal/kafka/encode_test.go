package kafka

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Strings longer than a STRING carries are cut at a character boundary
// in non-flexible versions; flexible versions cut only error messages; a
// nullable string shared with other state is not written through.
func TestAppendResponseFitsStrings(t *testing.T) {
	long := strings.Repeat("é", 20000) // 40000 bytes of 2-byte characters
	shared := long
	build := func(version int16) *kmsg.DescribeConfigsResponse {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.SetVersion(version)
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ErrorMessage, r.ResourceName = &shared, "short"
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = "a.config", &shared
		r.Configs = append(r.Configs, c)
		resp.Resources = append(resp.Resources, r)
		return resp
	}

	resp := build(1)
	if _, cut := appendResponse(nil, resp); !cut {
		t.Fatal("nothing cut at v1")
	}
	r := resp.Resources[0]
	for what, s := range map[string]string{"message": *r.ErrorMessage, "value": *r.Configs[0].Value} {
		if len(s) > maxString || len(s) < maxString-1 || !utf8.ValidString(s) {
			t.Fatalf("v1 %s: %d bytes, valid UTF-8 %v", what, len(s), utf8.ValidString(s))
		}
	}
	if r.ResourceName != "short" || shared != long {
		t.Fatal("a string that fits, or the shared one, changed")
	}

	resp = build(4) // flexible
	if _, cut := appendResponse(nil, resp); !cut {
		t.Fatal("nothing cut at v4")
	}
	if r := resp.Resources[0]; len(*r.ErrorMessage) > maxString || *r.Configs[0].Value != long {
		t.Fatalf("v4: message of %d bytes, value of %d bytes", len(*r.ErrorMessage), len(*r.Configs[0].Value))
	}

	resp = build(1)
	resp.Resources[0].ErrorMessage, resp.Resources[0].Configs[0].Value = nil, nil
	if _, cut := appendResponse(nil, resp); cut {
		t.Fatal("cut with nothing too long")
	}
}
