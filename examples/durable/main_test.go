package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("DURABLE_EXAMPLE_CHILD") != "" {
		sendAndDie(os.Getenv("DURABLE_EXAMPLE_CHILD"))
		return
	}
	goleak.VerifyTestMain(m)
}

// The example's crash, with this test binary as the child: what was sent
// before the kill is all there, and the message the child held has its
// delivery counted.
func TestRecoverAfterKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DURABLE_EXAMPLE_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Contains(t, string(out), `child received "2 apples" and dies`)

	var got bytes.Buffer
	require.NoError(t, recoverOrders(&got, dir))
	require.Equal(t, `recovered "2 apples": sequence number 1, delivery count 2
recovered "1 pear": sequence number 2, delivery count 1
recovered "6 plums": sequence number 3, delivery count 1
`, got.String())
	got.Reset()
	require.NoError(t, recoverOrders(&got, dir))
	require.Empty(t, got.String(), "the completions were kept")
}
