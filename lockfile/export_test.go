package lockfile

// Must is a test helper: it panics on error.
func Must(l *Lock, err error) *Lock {
	if err != nil {
		panic(err)
	}
	return l
}
