package cli

import "testing"

// The console reaches a listener bound to every address on the host it
// reached the daemon on; any other URL is used as the daemon gave it.
func TestReachable(t *testing.T) {
	for _, c := range []struct{ url, daemon, want string }{
		{"ws://0.0.0.0:8000/rpc", "10.1.2.3:8420", "ws://10.1.2.3:8000/rpc"},
		{"ws://[::]:8000/rpc", "[fd00::7]:8420", "ws://[fd00::7]:8000/rpc"},
		{"ws://0.0.0.0:8000/rpc", "db.example:8420", "ws://db.example:8000/rpc"},
		{"ws://127.0.0.1:8000/rpc", "10.1.2.3:8420", "ws://127.0.0.1:8000/rpc"},
		{"ws://192.168.1.4:8000/rpc", "127.0.0.1:8420", "ws://192.168.1.4:8000/rpc"},
		{"ws://0.0.0.0:8000/rpc", "not-an-address", "ws://0.0.0.0:8000/rpc"},
	} {
		if got := reachable(c.url, c.daemon); got != c.want {
			t.Errorf("reachable(%q, %q) = %q, want %q", c.url, c.daemon, got, c.want)
		}
	}
}
