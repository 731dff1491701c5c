package names

import "testing"

func TestPlace(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"projects", true},
		{"my wing", true},
		{"café", true},
		{"", false},
		{"   ", false},
		{" lead", false},
		{"trail ", false},
		{"tab\there", false},
		{"new\nline", false},
		{"a/b", false},
		{"..", false},
		{".", false},
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", false},
		{"6BA7B810-9DAD-11D1-80B4-00C04FD430C8", false},
		{"6ba7b8109dad11d180b400c04fd430c8", false},
		{"\xff\xfe", false},
		{"a\u200bb", false},
		{"a\u2028b", false},
		{"a\u2029b", false},
		{"\u202egnp.exe", false},
		{"\ufeffbom", false},
		{"a\u0085b", false},
		{"a\x7fb", false},
		{"日本語 wing", true},
		{string(make([]byte, MaxPlaceName+1)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Place(tt.name)
			if (got == "") != tt.ok {
				t.Fatalf("Place(%q) = %q, want ok=%v", tt.name, got, tt.ok)
			}
		})
	}
}

func TestDrawer(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"notes", true},
		{"src/main.go", true},
		{"a/b/c", true},
		{"", false},
		{" ", false},
		{"/abs", false},
		{"trailing/", false},
		{"a//b", false},
		{"./a", false},
		{"a/../b", false},
		{"..", false},
		{"a/.", false},
		{"bell\a", false},
		{" x", false},
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", false},
		{"urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8", false},
		{"a.b", true},
		{"...", true},
		{"dir/a\u200db", false},
		{"dir/\u202ecod.exe", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Drawer(tt.name)
			if (got == "") != tt.ok {
				t.Fatalf("Drawer(%q) = %q, want ok=%v", tt.name, got, tt.ok)
			}
		})
	}
}

func FuzzNames(f *testing.F) {
	for _, s := range []string{"a", "a/b", " ", "..", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, d := Place(s), Drawer(s)
		// Every good place name is a good drawer name.
		if p == "" && d != "" {
			t.Fatalf("place %q accepted but drawer refused: %s", s, d)
		}
		if d == "" && LooksLikeUUID(s) {
			t.Fatalf("UUID-like %q accepted", s)
		}
	})
}
