package modeltest

// What failure messages show of the model.

import (
	"fmt"
	"strings"
)

// dump describes an entity's messages, for failure messages.
func dump(e *mEntity) string {
	var b strings.Builder
	for q, l := range e.lists() {
		for _, x := range l {
			fmt.Fprintf(&b, "[%v item %d seq %v %v dl %q/%q src %q hops %d] ", subQ(q), x.item, x.key, x.state, x.dlReason, x.dlDesc, x.dlSource, x.hops)
		}
	}
	return b.String()
}
