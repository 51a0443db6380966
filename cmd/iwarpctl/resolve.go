// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Abbreviations, as ip accepts them: a word naming an object, a command or
// a keyword may be cut short. The rule, the same at every level:
//
//   - a word equal to a name or an alias is that one;
//   - else the one choice of which a name or an alias starts with the word;
//   - several choices are a usage error listing them (exit 2);
//   - none: the word is not abbreviated (cobra or the command judges it).
//
// ip resolves a short word by a fixed order of its comparisons instead
// (ip l s is link set); iwarpctl refuses to guess: link s is ambiguous
// between set and show.

// choice is one thing a word may name: its name, then its aliases.
type choice []string

// pick returns the name of the choice word names and, when it names
// several by prefix, their names (name is then "").
func pick(word string, choices []choice) (name string, ambiguous []string) {
	if word == "" {
		return "", nil
	}
	for _, c := range choices {
		if slices.Contains(c, word) {
			return c[0], nil
		}
	}
	var found []string
	for _, c := range choices {
		if slices.ContainsFunc(c, func(n string) bool { return strings.HasPrefix(n, word) }) {
			found = append(found, c[0])
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", found
}

// keyword resolves word among keywords (each a name without aliases). ok
// is false when word starts none of them; an ambiguous word is a usage
// error naming the candidates.
func keyword(word string, keywords ...string) (string, bool, error) {
	choices := make([]choice, len(keywords))
	for i, k := range keywords {
		choices[i] = choice{k}
	}
	name, amb := pick(word, choices)
	if len(amb) > 1 {
		return "", false, usageErr("ambiguous keyword %q: %s", word, strings.Join(amb, ", "))
	}
	return name, name != "", nil
}

// resolveArgs returns args with the abbreviated object and command names
// written out, walking the command tree as cobra will: flags (and the
// values of flags that take one) are skipped, and the walk ends at the
// first command without subcommands, at "--", at a word naming no
// command, and at cobra's hidden completion requests (whose last word is
// being completed and must stay as typed). The arguments of help name a
// command from the top again. Call after InitDefaultHelpCmd and
// InitDefaultCompletionCmd.
func resolveArgs(root *cobra.Command, args []string) ([]string, error) {
	out := slices.Clone(args)
	cur := root
	for i := 0; i < len(out); i++ {
		w := out[i]
		switch {
		case w == "--":
			return out, nil
		case len(w) > 1 && w[0] == '-':
			if flagTakesValue(cur, w) {
				i++
			}
			continue
		case w == cobra.ShellCompRequestCmd || w == cobra.ShellCompNoDescRequestCmd:
			return out, nil
		}
		var choices []choice
		var cmds []*cobra.Command
		for _, c := range cur.Commands() {
			if c.Hidden && !slices.Contains(append([]string{c.Name()}, c.Aliases...), w) {
				continue // hidden commands are never abbreviated
			}
			choices = append(choices, append(choice{c.Name()}, c.Aliases...))
			cmds = append(cmds, c)
		}
		if len(cmds) == 0 {
			return out, nil
		}
		name, amb := pick(w, choices)
		if len(amb) > 1 {
			return nil, usageErr("ambiguous command %q for %q: %s", w, cur.CommandPath(), strings.Join(amb, ", "))
		}
		if name == "" {
			return out, nil
		}
		out[i] = name
		cur = cmds[slices.IndexFunc(choices, func(c choice) bool { return c[0] == name })]
		if cur.Name() == "help" && cur.Parent() == root {
			cur = root
		}
	}
	return out, nil
}

// flagTakesValue reports whether the flag word (-x, -xyz, --name,
// --name=v) of cmd is followed by its value as the next word. Unknown
// flags take none: cobra reports them.
func flagTakesValue(cmd *cobra.Command, w string) bool {
	if strings.Contains(w, "=") {
		return false
	}
	cmd.InheritedFlags() // merges the parents' persistent flags into Flags
	fs := cmd.Flags()
	if name, ok := strings.CutPrefix(w, "--"); ok {
		f := fs.Lookup(name)
		return f != nil && f.NoOptDefVal == ""
	}
	// A cluster of shorthands: the first that takes a value takes the
	// rest of the word, or the next word if it ends the cluster.
	for j := 1; j < len(w); j++ {
		f := fs.ShorthandLookup(w[j : j+1])
		if f == nil {
			return false
		}
		if f.NoOptDefVal == "" {
			return j == len(w)-1
		}
	}
	return false
}
