package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibus-go/minibus/server"
)

func TestParseISODuration(t *testing.T) {
	const day = 24 * time.Hour
	good := []struct {
		in   string
		want time.Duration
	}{
		{"PT1M", time.Minute},
		{"PT1H", time.Hour},
		{"PT20S", 20 * time.Second},
		{"PT5M", 5 * time.Minute},
		{"P1D", day},
		{"P7D", 7 * day},
		{"P1Y", 365 * day},
		{"P1M", 30 * day}, // a month before T
		{"PT1M", time.Minute},
		{"P1MT1M", 30*day + time.Minute},
		{"P1Y2M3DT4H5M6S", 365*day + 60*day + 3*day + 4*time.Hour + 5*time.Minute + 6*time.Second},
		{"PT0.5S", 500 * time.Millisecond},
		{"PT1,25S", 1250 * time.Millisecond},
		{"PT1.123456789S", time.Second + 123456789},
		{"PT1.1234567891S", time.Second + 123456789}, // digits past the nanosecond dropped
		{"PT90M", 90 * time.Minute},
		{"PT36H", 36 * time.Hour},
		{"PT0S", 0},
		{"P0D", 0},
		{"P106751D", 106751 * day},
	}
	for _, tc := range good {
		got, err := server.ParseISODuration(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	bad := []string{
		"", "P", "PT", "P1DT", "T1H", "1H", "pt1m", "PT1X", "PT1", "P1H", "PT1D", "P1W",
		"-PT1M", "PT-1M", "P1DP1D", "PT1M1M", "PT1S1M", "P1D1Y", "PTT1M", "PT1.S", "PT.5S",
		"P1.5D", "PT1.5M", "PT 1M", "PT1M ", "P1D T1H", "PT1H1S1M",
	}
	for _, in := range bad {
		_, err := server.ParseISODuration(in)
		require.ErrorContains(t, err, "not an ISO 8601 duration", "%q", in)
	}
	for _, in := range []string{"P10675199DT2H48M5.4775807S", "P293Y", "P99999999999999999999999D", "PT9223372037S"} {
		_, err := server.ParseISODuration(in)
		require.ErrorContains(t, err, "longer than 292 years", in)
	}
}

func TestStripJSONC(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": 1} // c`, `{"a": 1}     `},
		{"{\"a\": 1, // c\n\"b\": 2}", "{\"a\": 1,     \n\"b\": 2}"},
		{`{"a": 1 /* c */}`, `{"a": 1        }`},
		{"/* a\nb */[1]", "    \n    [1]"},
		{`{"a": 1,}`, `{"a": 1 }`},
		{`[1, 2,]`, `[1, 2 ]`},
		{"[1, 2, // c\n]", "[1, 2      \n]"},
		{"{\"a\": [1,] ,\n}", "{\"a\": [1 ]  \n}"},
		{`{"a": "//x", "b": "/*y*/"}`, `{"a": "//x", "b": "/*y*/"}`},
		{`{"a": "q\"//x"}`, `{"a": "q\"//x"}`},
		{`{"a": "q\\"}// c`, `{"a": "q\\"}    `},
		{`{"a": ",}"}`, `{"a": ",}"}`},
		{"\xEF\xBB\xBF{}", "   {}"},
		{`{"a": "é"} // é`, `{"a": "é"}      `},
	}
	for _, tc := range cases {
		got, err := server.StripJSONC([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, string(got), tc.in)
		require.Len(t, got, len(tc.in), "offsets are kept")
	}
	_, err := server.StripJSONC([]byte("{\n  /* open"))
	require.ErrorContains(t, err, "line 2, column 3: the /* comment is not closed")
}
