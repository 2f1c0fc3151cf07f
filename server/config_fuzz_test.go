package server_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

// Whatever the bytes, ApplyConfig does not panic, and an error is a bad
// file (ErrInvalidArgument) that created nothing.
func FuzzApplyConfig(f *testing.F) {
	sample, err := os.ReadFile("testdata/emulator-config.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add([]byte(doc(`[{"Name": "q", "Properties": {"LockDuration": "PT1M", "ForwardTo": "t",},}]`,
		`[{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [{"Name": "r", "Properties": {"SqlFilter": {"SqlExpression": "a = 1"}, "Action": {"SqlExpression": "SET b = 2"}}}]}]}]`)))
	f.Add([]byte("{/* c */ \"UserConfig\": // c\n {\"Namespaces\": [{\"Queues\": [{\"Name\": \"a\\\"//\"}]}]}}"))
	f.Add([]byte(`{"UserConfig": {"Namespaces": [{"Queues": [{"Name": "a", "Properties": {"DefaultMessageTimeToLive": "P1Y2M3DT4H5M6.7S"}}]}]}}`))
	f.Fuzz(func(t *testing.T, config []byte) {
		ns := minibus.NewNamespace()
		defer ns.Close()
		err := server.ApplyConfig(ns, config)
		if err == nil {
			return
		}
		if !errors.Is(err, minibus.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "minibus: config") {
			t.Fatalf("error %q is not a bad file's", err)
		}
		if len(ns.Queues())+len(ns.Topics()) != 0 {
			t.Fatalf("a refused file created %v %v", ns.Queues(), ns.Topics())
		}
	})
}
