package bench

import "strings"

// AMQPBegin and AMQPEnd are the markers around the AMQP endpoint's
// section of RESULTS.md: bench/amqp.sh rewrites what lies between them,
// bench/run.sh and bench/durable.sh keep it as it is. A section given to
// [SpliceAMQP] starts and ends with them.
const (
	AMQPBegin = "<!-- amqp: begin. Written by bench/amqp.sh, kept by bench/run.sh and bench/durable.sh. -->"
	AMQPEnd   = "<!-- amqp: end -->"
)

// AMQPSection returns the AMQP endpoint's section of a RESULTS.md, markers
// included, or "" if it has none.
func AMQPSection(md string) string {
	i := strings.Index(md, AMQPBegin)
	if i < 0 {
		return ""
	}
	j := strings.Index(md[i:], AMQPEnd)
	if j < 0 {
		return ""
	}
	return md[i : i+j+len(AMQPEnd)]
}

// SpliceAMQP returns md with its AMQP section replaced by section, or
// with section appended if md has none.
func SpliceAMQP(md, section string) string {
	old := AMQPSection(md)
	if old == "" {
		if md != "" && !strings.HasSuffix(md, "\n") {
			md += "\n"
		}
		if md != "" {
			md += "\n"
		}
		return md + section + "\n"
	}
	return strings.Replace(md, old, section, 1)
}
