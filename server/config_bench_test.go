package server_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/minibus-go/minibus"
	"github.com/minibus-go/minibus/server"
)

// What ApplyConfig costs at the start of `minibus serve`: the emulator's
// sample, and a file at the emulator's limits (50 entities; 25 topics of
// 10 subscriptions with 2 rules each).
func BenchmarkApplyConfig(b *testing.B) {
	sample, err := os.ReadFile("testdata/emulator-config.json")
	if err != nil {
		b.Fatal(err)
	}
	var queues, topics []string
	for i := range 25 {
		queues = append(queues, fmt.Sprintf(`{"Name": "q%d", "Properties": {"LockDuration": "PT1M", "MaxDeliveryCount": 3}}`, i))
		var subs []string
		for j := range 10 {
			subs = append(subs, fmt.Sprintf(`{"Name": "s%d", "Rules": [
				{"Name": "a", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "n = %d"}, "Action": {"SqlExpression": "SET x = 1"}}},
				{"Name": "b", "Properties": {"FilterType": "Correlation", "CorrelationFilter": {"Label": "l%d", "Properties": {"k": %d}}}}]}`, j, j, j, j))
		}
		topics = append(topics, fmt.Sprintf(`{"Name": "t%d", "Subscriptions": [%s]}`, i, strings.Join(subs, ",")))
	}
	limits := []byte(doc("["+strings.Join(queues, ",")+"]", "["+strings.Join(topics, ",")+"]"))
	for _, bc := range []struct {
		name   string
		config []byte
	}{{"sample", sample}, {"limits", limits}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ns := minibus.NewNamespace()
				if err := server.ApplyConfig(ns, bc.config); err != nil {
					b.Fatal(err)
				}
				ns.Close()
			}
		})
	}
}
