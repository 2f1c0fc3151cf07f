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
// delivery counted. Run again on the same directory, the child finds the
// queue and the new orders' numbers follow the old ones.
func TestRecoverAfterKill(t *testing.T) {
	dir := t.TempDir()
	out := crashChildT(t, dir)
	require.Contains(t, out, "child created the queue orders in")
	require.Contains(t, out, `child received "2 apples" and dies`)

	var got bytes.Buffer
	require.NoError(t, recoverOrders(&got, dir))
	require.Equal(t, `opened the directory again: the queue orders holds 3 messages
recovered "2 apples": sequence number 1, delivery count 2
recovered "1 pear": sequence number 2, delivery count 1
recovered "6 plums": sequence number 3, delivery count 1
`, got.String())
	got.Reset()
	require.NoError(t, recoverOrders(&got, dir))
	require.Equal(t, "opened the directory again: the queue orders holds 0 messages\n", got.String(), "the completions were kept")

	out = crashChildT(t, dir)
	require.Contains(t, out, "child found the queue orders of an earlier run in "+dir+", holding 0 messages")
	got.Reset()
	require.NoError(t, recoverOrders(&got, dir))
	require.Equal(t, `opened the directory again: the queue orders holds 3 messages
recovered "2 apples": sequence number 4, delivery count 2
recovered "1 pear": sequence number 5, delivery count 1
recovered "6 plums": sequence number 6, delivery count 1
`, got.String())
}

// crashChildT runs the example's child on dir, with this test binary as
// the child, and returns its output once it is killed.
func crashChildT(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DURABLE_EXAMPLE_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.False(t, exit.Exited(), "killed, not exited: %s", out)
	return string(out)
}
