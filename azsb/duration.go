package azsb

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minibus-go/minibus"
)

// The admin package gives durations as ISO 8601 strings, as the service
// writes them (.NET's XmlConvert of a TimeSpan): "PT1M", "PT45S",
// "P14D", "PT1H30M", "PT0.5S". "Never" is TimeSpan.MaxValue.

// maxTimeSpan is .NET's TimeSpan.MaxValue, which the service uses for "no
// limit" (DefaultMessageTimeToLive and AutoDeleteOnIdle by default).
const maxTimeSpan = "P10675199DT2H48M5.4775807S"

// formatDuration writes d as the service does; 0 is "never", maxTimeSpan.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return maxTimeSpan
	}
	var b strings.Builder
	b.WriteByte('P')
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	if days > 0 {
		b.WriteString(strconv.FormatInt(int64(days), 10))
		b.WriteByte('D')
	}
	if d == 0 {
		return b.String()
	}
	b.WriteByte('T')
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	if h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10))
		b.WriteByte('H')
	}
	if m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10))
		b.WriteByte('M')
	}
	if d > 0 {
		sec := d / time.Second
		frac := d - sec*time.Second
		b.WriteString(strconv.FormatInt(int64(sec), 10))
		if frac > 0 {
			// TimeSpan has 100 ns ticks: at most 7 digits.
			f := fmt.Sprintf("%09d", int64(frac))[:7]
			b.WriteByte('.')
			b.WriteString(strings.TrimRight(f, "0"))
		}
		b.WriteByte('S')
	}
	return b.String()
}

// parseDuration reads an ISO 8601 duration as the service does: an
// optional years (365 days), months (30 days), weeks and days part, then a
// time part of hours, minutes and seconds with up to 7 decimals. A
// duration too long for a time.Duration (TimeSpan.MaxValue among them) is
// "never", 0. A nil string is 0 too ("the default"). field names it in
// errors, which wrap minibus.ErrInvalidArgument.
func parseDuration(field string, p *string) (time.Duration, error) {
	if p == nil {
		return 0, nil
	}
	total, ok := isoSeconds(*p)
	if !ok {
		return 0, fmt.Errorf("azsb: %s: %q is not an ISO 8601 duration: %w", field, *p, minibus.ErrInvalidArgument)
	}
	if total >= float64(math.MaxInt64)/float64(time.Second) {
		return 0, nil // TimeSpan.MaxValue and anything past time.Duration: never
	}
	return time.Duration(math.Round(total * float64(time.Second))), nil
}

// isoSeconds reads ISO 8601 duration s as parseDuration describes, in
// seconds; ok is false if s is not one.
func isoSeconds(s string) (total float64, ok bool) {
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return 0, false
	}
	inTime, found := false, false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime || len(rest) == 1 {
				return 0, false
			}
			inTime, rest = true, rest[1:]
			continue
		}
		secs, tail, ok := isoTerm(rest, inTime)
		if !ok {
			return 0, false
		}
		total += secs
		found = true
		rest = tail
	}
	return total, found
}

// The seconds in a unit of an ISO 8601 duration: in its date part, and in
// its time part (after the T), where M is minutes rather than months.
var (
	isoDateUnits = map[byte]float64{'Y': 365 * 86400, 'M': 30 * 86400, 'W': 7 * 86400, 'D': 86400}
	isoTimeUnits = map[byte]float64{'H': 3600, 'M': 60, 'S': 1}
)

// isoTerm reads one number and its unit from the start of s ("30M": 30
// minutes in the time part, 30 months in the date part) and returns it in
// seconds with the rest of s. Only seconds may have decimals.
func isoTerm(s string, inTime bool) (secs float64, rest string, ok bool) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 || i == len(s) {
		return 0, "", false
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, "", false
	}
	units := isoDateUnits
	if inTime {
		units = isoTimeUnits
	}
	unit, ok := units[s[i]]
	if !ok || (strings.Contains(s[:i], ".") && !(inTime && s[i] == 'S')) {
		return 0, "", false
	}
	return n * unit, s[i+1:], true
}
