package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// Issue 31: datastore.url and its password. The URL is read from the file
// and LOCI_DATASTORE_URL (the environment beats the file); a password in
// it, in the user part or as an option, is refused at validation with an
// error that tells where to put it and never repeats it; the password
// comes from LOCI_DATASTORE_PASSWORD, which beats datastore.password_file;
// neither the password nor the URL is in the configuration's JSON.
func TestDatastoreSettings(t *testing.T) {
	const pw = "s3cr3t-Hunter2-pw"
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("from-the-file\nsecond line ignored\n"), 0o600)
	os.WriteFile(file, []byte("[datastore]\nurl = \"postgres://loci@db.example:5433/palace?sslmode=disable\"\npassword_file = \""+pwFile+"\"\n"), 0o600)

	c, err := Load(file, envOf(map[string]string{"HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Datastore.Shared() || c.Datastore.URL != "postgres://loci@db.example:5433/palace?sslmode=disable" {
		t.Fatalf("url %q", c.Datastore.URL)
	}
	got, from, err := c.Datastore.ReadPassword()
	if err != nil || got != "from-the-file" || from != PasswordFromFile {
		t.Fatalf("the file's password: %q from %q, %v", got, from, err)
	}

	// The environment beats the file, for the URL and the password.
	c, err = Load(file, envOf(map[string]string{"HOME": dir, "LOCI_DATASTORE_URL": "postgresql://other@h2/db2", DatastorePasswordEnv: pw}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got, from, err = c.Datastore.ReadPassword()
	if err != nil || got != pw || from != PasswordFromEnv || c.Datastore.URL != "postgresql://other@h2/db2" {
		t.Fatalf("the environment's password and URL: %q from %q, %q, %v", got, from, c.Datastore.URL, err)
	}
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), pw) || strings.Contains(string(b), "other@h2") || strings.Contains(string(b), pwFile) {
		t.Fatalf("the configuration's JSON shows the password, the URL or the password's file: %s", b)
	}

	c.Datastore.Forget()
	if c.Datastore.Password != "" || c.Datastore.PasswordFrom != PasswordFromEnv {
		t.Fatalf("forgotten: %q from %q", c.Datastore.Password, c.Datastore.PasswordFrom)
	}

	// No URL: the embedded palace, as before.
	c, _ = Load(filepath.Join(dir, "absent.toml"), envOf(map[string]string{"HOME": dir, "LOCI_CONFIG": ""}))
	if c.Datastore.Shared() {
		t.Fatal("a shared store without datastore.url")
	}
}

func TestDatastoreURLRefused(t *testing.T) {
	const pw = "s3cr3t-Hunter2-pw"
	for url, says := range map[string]string{
		"postgres://loci:" + pw + "@db.example/palace":             "holds a password",
		"postgresql://loci@db.example/palace?password=" + pw:       "holds a password",
		"postgres://loci:" + pw + "@db.example/palace?sslmode=off": "holds a password",
		"mysql://loci:" + pw + "@db.example/palace":                "not a postgres://",
		"host=db.example password=" + pw:                           "not a postgres://",
		"postgres:///palace":                                       "names no host",
		"postgres://loci@db.example":                               "names no database",
	} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.Datastore.URL = url
		err := c.Validate()
		fe := fault.As(err)
		if !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(fe.Msg, "datastore.url") || !strings.Contains(fe.Msg, says) {
			t.Fatalf("%q: %v; want loci::config::invalid naming datastore.url and saying %q", url, err, says)
		}
		if strings.Contains(fe.Msg+fe.Help+err.Error(), pw) {
			t.Fatalf("%q: the error repeats the password: %v", url, err)
		}
		if says == "holds a password" && (!strings.Contains(fe.Help, DatastorePasswordEnv) || !strings.Contains(fe.Help, "datastore.password_file")) {
			t.Fatalf("%q: the help %q does not say where the password goes", url, fe.Help)
		}
	}
	for _, ok := range []string{"postgres://loci@127.0.0.1:5432/palace", "postgresql://loci@db/palace?sslmode=require&connect_timeout=3",
		"postgres://loci@/palace?host=/run/postgresql", ""} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.Datastore.URL = ok
		if err := c.Validate(); err != nil {
			t.Fatalf("%q: %v", ok, err)
		}
	}
	c := Default(envOf(map[string]string{"HOME": "/h"}))
	c.Datastore.PasswordFile = "/etc/loci/pw"
	if err := c.Validate(); !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(err.Error(), "datastore.password_file") {
		t.Fatalf("a password file without a URL: %v", err)
	}
}

// A password file that cannot be read or is empty is an error naming the
// setting, never anything read.
func TestDatastorePasswordFile(t *testing.T) {
	dir := t.TempDir()
	d := Datastore{URL: "postgres://loci@h/db", PasswordFile: filepath.Join(dir, "missing")}
	if _, _, err := d.ReadPassword(); !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	d.PasswordFile = empty
	if _, _, err := d.ReadPassword(); !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty file: %v", err)
	}
	crlf := filepath.Join(dir, "crlf")
	os.WriteFile(crlf, []byte("pw-with-crlf\r\n"), 0o600)
	d.PasswordFile = crlf
	if pw, _, err := d.ReadPassword(); err != nil || pw != "pw-with-crlf" {
		t.Fatalf("crlf: %q %v", pw, err)
	}
	d.PasswordFile = ""
	if pw, from, err := d.ReadPassword(); err != nil || pw != "" || from != PasswordFromNone {
		t.Fatalf("none: %q %q %v", pw, from, err)
	}
}

// Issue 31, the trial: a relative datastore.password_file (read from
// whatever directory the daemon starts in) is refused at validation; an
// absolute one is accepted.
func TestDatastorePasswordFileMustBeAbsolute(t *testing.T) {
	for _, rel := range []string{"pw", "./secrets/pw", "../pw"} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.Datastore.URL = "postgres://loci@db.example/palace"
		c.Datastore.PasswordFile = rel
		err := c.Validate()
		fe := fault.As(err)
		if !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(fe.Msg, "datastore.password_file") || !strings.Contains(fe.Msg, "must be an absolute path") {
			t.Fatalf("%q: %v; want loci::config::invalid saying it must be an absolute path", rel, err)
		}
	}
	// Through the environment too.
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte("[server]\n"), 0o600)
	c, err := Load(file, envOf(map[string]string{"HOME": dir,
		"LOCI_DATASTORE_URL": "postgres://loci@db.example/palace", "LOCI_DATASTORE_PASSWORD_FILE": "pw"}))
	if err == nil {
		err = c.Validate()
	}
	if !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(err.Error(), "must be an absolute path") {
		t.Fatalf("LOCI_DATASTORE_PASSWORD_FILE=pw: %v", err)
	}
	c = Default(envOf(map[string]string{"HOME": "/h"}))
	c.Datastore.URL = "postgres://loci@db.example/palace"
	c.Datastore.PasswordFile = "/etc/loci/pw"
	if err := c.Validate(); err != nil {
		t.Fatalf("an absolute password file: %v", err)
	}
}

// A password file the group or others may read is warned about, naming
// the file and its mode and never its content; one only its owner reads,
// none, or one the environment's password overrides, is not.
func TestDatastorePasswordFileWarning(t *testing.T) {
	const pw = "content-never-shown-4711"
	dir := t.TempDir()
	f := filepath.Join(dir, "pw")
	os.WriteFile(f, []byte(pw+"\n"), 0o600)
	for mode, warn := range map[os.FileMode]string{0o600: "", 0o400: "", 0o640: "0640", 0o644: "0644", 0o604: "0604"} {
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		w := Datastore{URL: "postgres://loci@h/db", PasswordFile: f}.PasswordFileWarning()
		if warn == "" && w != "" || warn != "" && (!strings.Contains(w, f) || !strings.Contains(w, "mode "+warn) || !strings.Contains(w, "chmod 600")) {
			t.Fatalf("mode %04o: warning %q", mode, w)
		}
		if strings.Contains(w, pw) {
			t.Fatalf("the warning shows the password: %q", w)
		}
	}
	if w := (Datastore{URL: "postgres://loci@h/db", PasswordFile: f, Password: "from-env"}).PasswordFileWarning(); w != "" {
		t.Fatalf("the environment's password is used, the file not read: %q", w)
	}
	if w := (Datastore{URL: "postgres://loci@h/db"}).PasswordFileWarning(); w != "" {
		t.Fatalf("no file: %q", w)
	}
}
