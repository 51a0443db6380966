// SPDX-License-Identifier: BSD-3-Clause

package vm

import (
	"os"
	"strconv"
	"time"
)

// guestPassEnv are the host's variables TestVM hands to the guest tests
// as they are: the stress run's length and the random seeds of the stress
// and death tests (tests/vm/README.md).
var guestPassEnv = []string{"IWARP_STRESS_TIME", "IWARP_STRESS_SEED", "IWARP_DEATH_SEED"}

// passedEnv returns those of guestPassEnv that are set.
func passedEnv() map[string]string {
	env := map[string]string{}
	for _, k := range guestPassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return env
}

// stressExtra is what a long IWARP_STRESS_TIME adds to the boot's default
// timeout (0 when unset or unreadable; the guest test reports a bad value).
func stressExtra() time.Duration {
	s := os.Getenv("IWARP_STRESS_TIME")
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return 0
}
