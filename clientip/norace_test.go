//go:build !race

package clientip

const raceEnabled = false
