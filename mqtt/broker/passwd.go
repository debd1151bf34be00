package broker

import (
	"bufio"
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// maxIterations bounds the PBKDF2 iteration count read from a password
// file, so a corrupt file cannot make every connection attempt take minutes.
const maxIterations = 10_000_000

// passwordHash is one user's entry of a Mosquitto password file.
type passwordHash struct {
	pbkdf2     bool   // $7$ (PBKDF2-HMAC-SHA512) rather than $6$ (salted SHA-512)
	iterations int    // PBKDF2 iterations
	salt       []byte // the decoded salt
	hash       []byte // the decoded 64-byte digest
}

// matches reports whether password hashes to h, in time independent of
// where the digests differ.
func (h passwordHash) matches(password []byte) bool {
	var sum []byte
	if h.pbkdf2 {
		var err error
		sum, err = pbkdf2.Key(sha512.New, string(password), h.salt, h.iterations, len(h.hash))
		if err != nil {
			return false
		}
	} else {
		d := sha512.New()
		d.Write(password)
		d.Write(h.salt)
		sum = d.Sum(nil)
	}
	return subtle.ConstantTimeCompare(sum, h.hash) == 1
}

// readPasswordFile reads a password file written by mosquitto_passwd: one
// "user:hash" line per user, where hash is $7$<iterations>$<salt>$<digest>
// (PBKDF2-HMAC-SHA512, the default of Mosquitto 2.0) or $6$<salt>$<digest>
// (salted SHA-512, -H sha512), salt and digest in base64. Blank lines and
// lines starting with '#' are skipped.
func readPasswordFile(path string) (map[string]passwordHash, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("broker: password file: %w", err)
	}
	users := map[string]passwordHash{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("broker: password file %s:%d: want user:hash", path, n)
		}
		h, err := parseHash(hash)
		if err != nil {
			return nil, fmt.Errorf("broker: password file %s:%d: user %q: %w", path, n, user, err)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("broker: password file %s:%d: user %q listed twice", path, n, user)
		}
		users[user] = h
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("broker: password file %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("broker: password file %s has no users; add one with mosquitto_passwd", path)
	}
	return users, nil
}

// parseHash parses the hash part of a password file line.
func parseHash(s string) (passwordHash, error) {
	parts := strings.Split(s, "$")
	// A leading '$' makes parts[0] empty: ["", "7", iter, salt, hash].
	if len(parts) < 2 || parts[0] != "" {
		return passwordHash{}, fmt.Errorf("the password is not hashed; run mosquitto_passwd -U on the file")
	}
	var h passwordHash
	switch {
	case parts[1] == "7" && len(parts) == 5:
		it, err := strconv.Atoi(parts[2])
		if err != nil || it < 1 || it > maxIterations {
			return passwordHash{}, fmt.Errorf("iteration count %q is not a number from 1 to %d", parts[2], maxIterations)
		}
		h.pbkdf2, h.iterations = true, it
		parts = parts[3:]
	case parts[1] == "6" && len(parts) == 4:
		parts = parts[2:]
	default:
		return passwordHash{}, fmt.Errorf("hash type $%s$ is not supported; write the file with mosquitto_passwd -H sha512-pbkdf2", parts[1])
	}
	var err error
	if h.salt, err = base64.StdEncoding.DecodeString(parts[0]); err != nil || len(h.salt) == 0 {
		return passwordHash{}, fmt.Errorf("salt is not base64")
	}
	if h.hash, err = base64.StdEncoding.DecodeString(parts[1]); err != nil || len(h.hash) != sha512.Size {
		return passwordHash{}, fmt.Errorf("digest is not %d bytes of base64", sha512.Size)
	}
	return h, nil
}
