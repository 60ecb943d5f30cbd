package handoff

// Byte loops for the grammars the format rules apply to every document
// (TestGrammars and FuzzGrammars hold each to its regular expression,
// written beside it).

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLowerHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') }

// digits reports whether s[i:i+n] are n decimal digits.
func digits(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for _, c := range []byte(s[i : i+n]) {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// isAgentID: ^[a-z0-9][a-z0-9-]*$
func isAgentID(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !isDigit(c) && (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

// isRFC3339: ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$
func isRFC3339(s string) bool {
	if len(s) < 20 || !digits(s, 0, 4) || s[4] != '-' || !digits(s, 5, 2) || s[7] != '-' || !digits(s, 8, 2) ||
		s[10] != 'T' || !digits(s, 11, 2) || s[13] != ':' || !digits(s, 14, 2) || s[16] != ':' || !digits(s, 17, 2) {
		return false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 || j-i-1 > 9 {
			return false
		}
		i = j
	}
	switch {
	case i < len(s) && s[i] == 'Z':
		return i+1 == len(s)
	case i < len(s) && (s[i] == '+' || s[i] == '-'):
		return i+6 == len(s) && digits(s, i+1, 2) && s[i+3] == ':' && digits(s, i+4, 2)
	}
	return false
}

// isLowerHexN: ^[0-9a-f]{min,max}$
func isLowerHexN(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		if !isLowerHex(c) {
			return false
		}
	}
	return true
}

// isSHA256Hex: ^[0-9a-f]{64}$
func isSHA256Hex(s string) bool { return isLowerHexN(s, 64, 64) }

// isFieldKey: ^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$
func isFieldKey(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !isDigit(c) && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// isDecimalInt: ^-?(0|[1-9][0-9]*)$
func isDecimalInt(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	switch {
	case s == "":
		return false
	case s[0] == '0':
		return len(s) == 1
	}
	return digits(s, 0, len(s))
}
