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
	s := *p
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("azsb: %s: %q is not an ISO 8601 duration: %w", field, s, minibus.ErrInvalidArgument)
	}
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return bad()
	}
	var total float64 // seconds
	inTime := false
	units := map[bool]map[byte]float64{
		false: {'Y': 365 * 86400, 'M': 30 * 86400, 'W': 7 * 86400, 'D': 86400},
		true:  {'H': 3600, 'M': 60, 'S': 1},
	}
	any := false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return bad()
			}
			inTime = true
			rest = rest[1:]
			if rest == "" {
				return bad()
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 || i == len(rest) {
			return bad()
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return bad()
		}
		unit, ok := units[inTime][rest[i]]
		if !ok || (strings.Contains(rest[:i], ".") && !(inTime && rest[i] == 'S')) {
			return bad()
		}
		total += n * unit
		any = true
		rest = rest[i+1:]
	}
	if !any {
		return bad()
	}
	if total >= float64(math.MaxInt64)/float64(time.Second) {
		return 0, nil // TimeSpan.MaxValue and anything past time.Duration: never
	}
	return time.Duration(math.Round(total * float64(time.Second))), nil
}
