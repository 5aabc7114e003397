package console

import (
	"fmt"
	"strings"
)

// The sparklines' view box.
const (
	sparkW = 240
	sparkH = 40
)

// sparkPath is the SVG path of values as a line over a w by h box, the
// largest value at the top and zero at the bottom.
func sparkPath(values []float64, w, h float64) string {
	if len(values) == 0 {
		return ""
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	if top == 0 {
		top = 1
	}
	var b strings.Builder
	step := 0.0
	if len(values) > 1 {
		step = w / float64(len(values)-1)
	}
	for i, v := range values {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&b, "%s%.1f,%.1f", cmd, float64(i)*step, h-1-(v/top)*(h-2))
	}
	if len(values) == 1 {
		fmt.Fprintf(&b, "L%.1f,%.1f", w, h-1-(values[0]/top)*(h-2))
	}
	return b.String()
}
