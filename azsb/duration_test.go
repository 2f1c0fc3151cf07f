package azsb_test

import (
	"testing"
	"time"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/azsb"
	"github.com/stretchr/testify/require"
)

func TestDurations(t *testing.T) {
	for s, d := range map[string]time.Duration{
		"PT1M": time.Minute, "PT45S": 45 * time.Second, "PT4H": 4 * time.Hour, "P14D": 14 * 24 * time.Hour,
		"PT1H30M": 90 * time.Minute, "P1DT2H3M4S": 26*time.Hour + 3*time.Minute + 4*time.Second,
		"PT0.5S": 500 * time.Millisecond, "PT1.0000001S": time.Second + 100*time.Nanosecond,
		"P10675199DT2H48M5.4775807S": 0, // TimeSpan.MaxValue: never
	} {
		got, err := azsb.ParseDuration("f", &s)
		require.NoError(t, err, s)
		require.Equal(t, d, got, s)
		require.Equal(t, s, azsb.FormatDuration(d), "%v writes as the service does", d)
	}
	for s, d := range map[string]time.Duration{"P1W": 7 * 24 * time.Hour, "P1Y": 365 * 24 * time.Hour, "PT90M": 90 * time.Minute, "P1M": 30 * 24 * time.Hour} {
		got, err := azsb.ParseDuration("f", &s)
		require.NoError(t, err, s)
		require.Equal(t, d, got, s)
	}
	for _, s := range []string{"", "P", "PT", "1M", "PT1", "P1H", "PTM", "P1.5D", "PT1X", "PT1M1M1", "PTT1M"} {
		_, err := azsb.ParseDuration("f", &s)
		require.ErrorIs(t, err, minibus.ErrInvalidArgument, "%q", s)
	}
	got, err := azsb.ParseDuration("f", nil)
	require.NoError(t, err)
	require.Zero(t, got)
	require.Equal(t, "PT1M", azsb.FormatDuration(time.Minute))
}
