package server

import (
	"errors"
	"math"
	"time"
)

// Durations in Config.json are ISO 8601 durations, as the emulator's schema
// has them: P[nY][nM][nD][T[nH][nM][nS]], at least one part, each part at
// most once and in that order. As .NET's XmlConvert.ToTimeSpan (what the
// emulator's Azure tooling reads them with), a year is 365 days and a
// month 30 days; weeks (W) and signs are refused. The seconds may have a
// fraction ("PT1.5S", to the nanosecond; further digits are dropped).

var (
	// errDurationSyntax: the text is not such a duration.
	errDurationSyntax = errors.New("not an ISO 8601 duration")
	// errDurationRange: the duration is longer than a time.Duration holds
	// (about 292 years), as Azure's "never" P10675199DT2H48M5.4775807S is.
	errDurationRange = errors.New("longer than 292 years")
)

const day = 24 * time.Hour

// durationUnits are the parts of a duration in the order they must come:
// the date parts, then after 'T' the time parts.
var durationUnits = [...]struct {
	letter byte
	time   bool
	size   time.Duration
}{
	{'Y', false, 365 * day},
	{'M', false, 30 * day},
	{'D', false, day},
	{'H', true, time.Hour},
	{'M', true, time.Minute},
	{'S', true, time.Second},
}

// parseISODuration parses s (see above). Its errors are errDurationSyntax
// and errDurationRange.
func parseISODuration(s string) (time.Duration, error) {
	if len(s) < 2 || s[0] != 'P' {
		return 0, errDurationSyntax
	}
	var (
		total    time.Duration
		overflow bool
		inTime   bool
		next     int // the first unit the next part may use
		parts    int
	)
	add := func(d time.Duration) {
		if total > math.MaxInt64-d {
			overflow = true
		}
		total += d
	}
	for i := 1; i < len(s); {
		if s[i] == 'T' {
			if inTime || i == len(s)-1 {
				return 0, errDurationSyntax // a second T, or T with no time part
			}
			inTime = true
			i++
			continue
		}
		start := i
		var n uint64
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if n > (math.MaxUint64-9)/10 {
				overflow = true
			} else {
				n = n*10 + uint64(s[i]-'0')
			}
		}
		if i == start {
			return 0, errDurationSyntax
		}
		var frac time.Duration // nanoseconds of a fraction of a second
		hasFrac := false
		if i < len(s) && (s[i] == '.' || s[i] == ',') {
			hasFrac = true
			i++
			digits := 0
			for scale := time.Duration(1e8); i < len(s) && '0' <= s[i] && s[i] <= '9'; i, scale = i+1, scale/10 {
				frac += time.Duration(s[i]-'0') * scale
				digits++
			}
			if digits == 0 {
				return 0, errDurationSyntax
			}
		}
		if i == len(s) {
			return 0, errDurationSyntax // a number without its unit
		}
		u := next
		for u < len(durationUnits) && (durationUnits[u].letter != s[i] || durationUnits[u].time != inTime) {
			u++
		}
		if u == len(durationUnits) || hasFrac && durationUnits[u].letter != 'S' {
			return 0, errDurationSyntax // unknown, repeated or out of order; a fraction not on seconds
		}
		size := durationUnits[u].size
		if n > uint64(math.MaxInt64/size) {
			overflow = true
		} else {
			add(time.Duration(n) * size)
		}
		add(frac)
		next, parts = u+1, parts+1
		i++
	}
	switch {
	case parts == 0:
		return 0, errDurationSyntax
	case overflow:
		return 0, errDurationRange
	}
	return total, nil
}
