//go:build !race

package admit

const raceEnabled = false
