// SPDX-License-Identifier: BSD-3-Clause

// Command gen turns netlinkproto/iwarp.yaml, the one description of the iwarp
// generic netlink family, into the C uapi header, the module's policy and
// attribute-check code, and the Go constants.
//
//	go run ./netlinkproto/gen -spec netlinkproto/iwarp.yaml -root .
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

type entry struct {
	Name string `yaml:"name"`
	Doc  string `yaml:"doc"`
}

// mcastGroup is a multicast group; admin groups need CAP_NET_ADMIN in the
// user namespace owning the network namespace to join.
type mcastGroup struct {
	Name  string `yaml:"name"`
	Doc   string `yaml:"doc"`
	Admin bool   `yaml:"admin"`
}

type definition struct {
	Name    string  `yaml:"name"`
	Type    string  `yaml:"type"` // enum or flags
	Doc     string  `yaml:"doc"`
	Entries []entry `yaml:"entries"`
}

type attribute struct {
	Name   string `yaml:"name"`
	Type   string `yaml:"type"` // u8, u16, u32, u64, string, binary
	MaxLen int    `yaml:"max-len"`
	Lens   []int  `yaml:"lens"` // binary: the only lengths allowed
	Enum   string `yaml:"enum"`
	Flags  string `yaml:"flags"`
	Doc    string `yaml:"doc"`
}

type request struct {
	Required []string `yaml:"required"`
	Optional []string `yaml:"optional"`
}

type command struct {
	Name    string   `yaml:"name"`
	Doc     string   `yaml:"doc"`
	Admin   bool     `yaml:"admin"`
	Dump    bool     `yaml:"dump"`
	NoDo    bool     `yaml:"no-do"` // dump only: no doit handler
	Request request  `yaml:"request"`
	Reply   []string `yaml:"reply"`
	Errors  []string `yaml:"errors"`
}

type notification struct {
	Command string `yaml:"command"`
	Doc     string `yaml:"doc"`
}

type spec struct {
	Name          string         `yaml:"name"`
	Version       int            `yaml:"version"`
	CPrefix       string         `yaml:"c-prefix"`
	Doc           string         `yaml:"doc"`
	McastGroups   []mcastGroup   `yaml:"mcast-groups"`
	Definitions   []definition   `yaml:"definitions"`
	Attributes    []attribute    `yaml:"attributes"`
	Commands      []command      `yaml:"commands"`
	Notifications []notification `yaml:"notifications"`
}

func main() {
	specPath := flag.String("spec", "netlinkproto/iwarp.yaml", "family description")
	root := flag.String("root", ".", "repository root")
	flag.Parse()

	raw, err := os.ReadFile(*specPath)
	if err != nil {
		log.Fatal(err)
	}
	var s spec
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		log.Fatalf("%s: %v", *specPath, err)
	}
	if err := s.check(); err != nil {
		log.Fatalf("%s: %v", *specPath, err)
	}
	outputs := map[string]string{
		"uapi/iwarp.h":                 s.uapiHeader(),
		"kmod/nl_gen.h":                s.kernelHeader(),
		"kmod/nl_gen.c":                s.kernelSource(),
		"netlinkproto/zz_generated.go": s.goSource(),
	}
	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(*root, n), []byte(outputs[n]), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func (s *spec) check() error {
	defs := map[string]definition{}
	for _, d := range s.Definitions {
		if d.Type != "enum" && d.Type != "flags" {
			return fmt.Errorf("definition %s: type %q", d.Name, d.Type)
		}
		if d.Type == "flags" && !strings.HasSuffix(d.Name, "-flags") {
			return fmt.Errorf("flags definition %s must end in -flags", d.Name)
		}
		defs[d.Name] = d
	}
	attrs := map[string]bool{}
	for _, a := range s.Attributes {
		switch a.Type {
		case "u8", "u16", "u32", "u64":
		case "string", "binary":
			if a.MaxLen <= 0 && len(a.Lens) == 0 {
				return fmt.Errorf("attribute %s: %s needs max-len or lens", a.Name, a.Type)
			}
		default:
			return fmt.Errorf("attribute %s: type %q", a.Name, a.Type)
		}
		if a.Enum != "" && defs[a.Enum].Type != "enum" {
			return fmt.Errorf("attribute %s: unknown enum %s", a.Name, a.Enum)
		}
		if a.Flags != "" && defs[a.Flags].Type != "flags" {
			return fmt.Errorf("attribute %s: unknown flags %s", a.Name, a.Flags)
		}
		attrs[a.Name] = true
	}
	cmds := map[string]bool{}
	for _, c := range s.Commands {
		for _, l := range [][]string{c.Request.Required, c.Request.Optional, c.Reply} {
			for _, a := range l {
				if !attrs[a] {
					return fmt.Errorf("command %s: unknown attribute %s", c.Name, a)
				}
			}
		}
		if c.NoDo && (!c.Dump || len(c.Request.Required) > 0) {
			return fmt.Errorf("command %s: no-do needs dump and no required attributes", c.Name)
		}
		cmds[c.Name] = true
	}
	for _, n := range s.Notifications {
		if !cmds[n.Command] {
			return fmt.Errorf("notification: unknown command %s", n.Command)
		}
	}
	return nil
}

// Naming.

func upper(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

var initialisms = map[string]string{
	"crc": "CRC", "p2p": "P2P", "rfc7306": "RFC7306", "netns": "NetNS", "ifindex": "Ifindex", "mr": "MR", "pd": "PD",
	"cq": "CQ", "qp": "QP", "sq": "SQ", "rq": "RQ", "fd": "FD", "rts": "RTS", "stag": "STag", "id": "ID",
	"mpa": "MPA", "rtr": "RTR", "ird": "IRD", "ord": "ORD", "pid": "PID",
	"cm": "CM", "pdata": "PData", "tx": "TX", "rx": "RX", "fpdus": "FPDUs",
}

func camel(name string) string {
	var b strings.Builder
	for _, w := range strings.Split(name, "-") {
		if v, ok := initialisms[w]; ok {
			b.WriteString(v)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

func (s *spec) attrC(name string) string { return s.CPrefix + "_A_" + upper(name) }
func (s *spec) cmdC(name string) string  { return s.CPrefix + "_CMD_" + upper(name) }
func (s *spec) lower() string            { return strings.ToLower(s.CPrefix) }
func (s *spec) enumType(d definition) string {
	return s.lower() + "_" + strings.ReplaceAll(d.Name, "-", "_")
}

func (s *spec) entryC(d definition, e entry) string {
	if d.Type == "flags" {
		return s.CPrefix + "_" + upper(strings.TrimSuffix(d.Name, "-flags")) + "_F_" + upper(e.Name)
	}
	return s.CPrefix + "_" + upper(d.Name) + "_" + upper(e.Name)
}

func (s *spec) flagsAllC(d definition) string {
	return "__" + s.CPrefix + "_" + upper(strings.TrimSuffix(d.Name, "-flags")) + "_F_ALL"
}

func (s *spec) enumMaxC(d definition) string {
	return s.CPrefix + "_" + upper(d.Name) + "_MAX"
}

func (s *spec) def(name string) definition {
	for _, d := range s.Definitions {
		if d.Name == name {
			return d
		}
	}
	panic(name)
}

func (s *spec) attr(name string) attribute {
	for _, a := range s.Attributes {
		if a.Name == name {
			return a
		}
	}
	panic(name)
}

func cType(a attribute) string {
	if a.Type == "string" {
		return fmt.Sprintf("string, at most %d bytes", a.MaxLen)
	}
	if a.Type == "binary" {
		if len(a.Lens) > 0 {
			return "binary, " + lensText(a.Lens) + " bytes"
		}
		return fmt.Sprintf("binary, at most %d bytes", a.MaxLen)
	}
	return a.Type
}

// wrap breaks text into lines of at most width columns, keeping words whole
// and continuation lines indented by cont.
func wrap(text string, width int, cont string) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line = cont + w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// cdoc writes one kernel-doc item, wrapped to the kernel's line length.
func cdoc(b *strings.Builder, text string) {
	for _, l := range wrap(text, 76, "  ") {
		fmt.Fprintf(b, " * %s\n", l)
	}
}

// comment renders text as a C block-comment body with the given indent.
func comment(b *strings.Builder, indent, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		l = strings.TrimRight(l, " ")
		if l == "" {
			fmt.Fprintf(b, "%s *\n", indent)
		} else {
			fmt.Fprintf(b, "%s * %s\n", indent, l)
		}
	}
}

const generatedNote = "Generated by netlinkproto/gen from netlinkproto/iwarp.yaml: do not edit."

func (s *spec) uapiHeader() string {
	var b strings.Builder
	guard := "_UAPI_LINUX_" + s.CPrefix + "_H"
	fmt.Fprintf(&b, "/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */\n")
	fmt.Fprintf(&b, "/* %s */\n\n", generatedNote)
	fmt.Fprintf(&b, "#ifndef %s\n#define %s\n\n", guard, guard)
	b.WriteString("/*\n")
	comment(&b, "", s.Doc)
	b.WriteString(" *\n * Attributes use host byte order. Strings may carry a terminating NUL,\n")
	b.WriteString(" * which is not counted in their length.\n */\n\n")
	fmt.Fprintf(&b, "#define %s_GENL_NAME\t\t%q\n", s.CPrefix, s.Name)
	fmt.Fprintf(&b, "#define %s_GENL_VERSION\t%d\n\n", s.CPrefix, s.Version)
	for _, g := range s.McastGroups {
		b.WriteString("/*\n")
		cdoc(&b, g.Doc)
		b.WriteString(" */\n")
		fmt.Fprintf(&b, "#define %s_MCGRP_%s\t%q\n\n", s.CPrefix, upper(g.Name), g.Name)
	}
	for _, d := range s.Definitions {
		b.WriteString("/**\n")
		cdoc(&b, fmt.Sprintf("enum %s - %s", s.enumType(d), d.Doc))
		for _, e := range d.Entries {
			cdoc(&b, fmt.Sprintf("@%s: %s", s.entryC(d, e), e.Doc))
		}
		b.WriteString(" */\n")
		fmt.Fprintf(&b, "enum %s {\n", s.enumType(d))
		for i, e := range d.Entries {
			if d.Type == "flags" {
				fmt.Fprintf(&b, "\t%s = 1U << %d,\n", s.entryC(d, e), i)
			} else {
				fmt.Fprintf(&b, "\t%s = %d,\n", s.entryC(d, e), i)
			}
		}
		if d.Type == "flags" {
			fmt.Fprintf(&b, "\n\t%s = (1U << %d) - 1,\n", s.flagsAllC(d), len(d.Entries))
		} else {
			fmt.Fprintf(&b, "\n\t__%s,\n", s.enumMaxC(d))
		}
		b.WriteString("};\n")
		if d.Type == "enum" {
			fmt.Fprintf(&b, "\n#define %s (__%s - 1)\n", s.enumMaxC(d), s.enumMaxC(d))
		}
		b.WriteString("\n")
	}
	b.WriteString("/**\n")
	fmt.Fprintf(&b, " * enum %s_attr - attributes of every command (one flat space)\n", s.lower())
	fmt.Fprintf(&b, " * @%s_A_UNSPEC: unused\n", s.CPrefix)
	for _, a := range s.Attributes {
		extra := ""
		if a.Enum != "" {
			extra = fmt.Sprintf(" (enum %s)", s.enumType(s.def(a.Enum)))
		}
		if a.Flags != "" {
			extra = fmt.Sprintf(" (enum %s)", s.enumType(s.def(a.Flags)))
		}
		cdoc(&b, fmt.Sprintf("@%s: %s%s. %s", s.attrC(a.Name), cType(a), extra, a.Doc))
	}
	b.WriteString(" */\n")
	fmt.Fprintf(&b, "enum %s_attr {\n\t%s_A_UNSPEC = 0,\n", s.lower(), s.CPrefix)
	for i, a := range s.Attributes {
		fmt.Fprintf(&b, "\t%s = %d,\n", s.attrC(a.Name), i+1)
	}
	fmt.Fprintf(&b, "\n\t__%s_A_MAX,\n};\n\n#define %s_A_MAX (__%s_A_MAX - 1)\n\n", s.CPrefix, s.CPrefix, s.CPrefix)

	// Per-command doc blocks.
	for _, c := range s.Commands {
		b.WriteString("/*\n")
		fmt.Fprintf(&b, " * %s\n", s.cmdC(c.Name))
		comment(&b, "", "  "+strings.ReplaceAll(strings.TrimRight(c.Doc, "\n"), "\n", "\n  "))
		perm := "none (any user)"
		if c.Admin {
			perm = "CAP_NET_ADMIN over the network namespace"
		}
		fmt.Fprintf(&b, " *   Permission: %s.\n", perm)
		switch {
		case c.NoDo:
			b.WriteString(" *   Dump only: needs NLM_F_DUMP (else EOPNOTSUPP).\n")
		case c.Dump:
			b.WriteString(" *   Supports NLM_F_DUMP (request attributes then not required).\n")
		}
		for _, a := range c.Request.Required {
			fmt.Fprintf(&b, " *   Request, required: %s (%s)\n", s.attrC(a), cType(s.attr(a)))
		}
		for _, a := range c.Request.Optional {
			fmt.Fprintf(&b, " *   Request, optional: %s (%s)\n", s.attrC(a), cType(s.attr(a)))
		}
		if len(c.Reply) > 0 {
			names := make([]string, len(c.Reply))
			for i, a := range c.Reply {
				names[i] = s.attrC(a)
			}
			cdoc(&b, "  Reply: "+strings.Join(names, ", "))
		}
		for _, e := range c.Errors {
			cdoc(&b, "  Error "+e)
		}
		b.WriteString(" */\n")
	}
	b.WriteString("\n/* Notifications (multicast group \"events\"):\n")
	for _, n := range s.Notifications {
		cdoc(&b, fmt.Sprintf("  %s: %s", s.cmdC(n.Command), n.Doc))
	}
	b.WriteString(" */\n")
	fmt.Fprintf(&b, "enum %s_cmd {\n\t%s_CMD_UNSPEC = 0,\n", s.lower(), s.CPrefix)
	for i, c := range s.Commands {
		fmt.Fprintf(&b, "\t%s = %d,\n", s.cmdC(c.Name), i+1)
	}
	fmt.Fprintf(&b, "\n\t__%s_CMD_MAX,\n};\n\n#define %s_CMD_MAX (__%s_CMD_MAX - 1)\n\n", s.CPrefix, s.CPrefix, s.CPrefix)
	fmt.Fprintf(&b, "#endif /* %s */\n", guard)
	return b.String()
}

func (s *spec) kernelHeader() string {
	var b strings.Builder
	fmt.Fprintf(&b, "/* SPDX-License-Identifier: GPL-2.0-only */\n/* %s */\n\n", generatedNote)
	b.WriteString("#ifndef _IWARP_NL_GEN_H\n#define _IWARP_NL_GEN_H\n\n")
	b.WriteString("#include <net/genetlink.h>\n#include <uapi/linux/netlink.h>\n\n#include \"iwarp.h\"\n\n")
	b.WriteString("extern struct genl_family iwarp_nl_family;\n\n")
	b.WriteString("enum iwarp_nl_mcgrp {\n")
	for _, g := range s.McastGroups {
		fmt.Fprintf(&b, "\tIWARP_NL_MCGRP_%s,\n", upper(g.Name))
	}
	b.WriteString("};\n\n/* Handlers, in netlink.c. */\n")
	for _, c := range s.Commands {
		fn := strings.ReplaceAll(c.Name, "-", "_")
		if !c.NoDo {
			fmt.Fprintf(&b, "int iwarp_nl_%s_doit(struct sk_buff *skb, struct genl_info *info);\n", fn)
		}
		if c.Dump {
			fmt.Fprintf(&b, "int iwarp_nl_%s_dumpit(struct sk_buff *skb, struct netlink_callback *cb);\n", fn)
		}
	}
	b.WriteString("\n#endif /* _IWARP_NL_GEN_H */\n")
	return b.String()
}

func (s *spec) kernelSource() string {
	var b strings.Builder
	fmt.Fprintf(&b, "// SPDX-License-Identifier: GPL-2.0-only\n/* %s */\n\n", generatedNote)
	b.WriteString(`#include <linux/module.h>
#include <linux/string.h>
#include <net/genetlink.h>

#include "compat.h"
#include "nl_gen.h"

/* Outcome of a string check, mapped to a message at each call site. */
enum iwarp_nla_str {
	IWARP_NLA_STR_OK,
	IWARP_NLA_STR_EMPTY,
	IWARP_NLA_STR_LONG,
	IWARP_NLA_STR_NUL,
};

static enum iwarp_nla_str iwarp_nla_string(const struct nlattr *nla, int maxlen)
{
	const char *p = nla_data(nla);
	int len = nla_len(nla);

	if (len > 0 && p[len - 1] == '\0')
		len--;
	if (len == 0)
		return IWARP_NLA_STR_EMPTY;
	if (len > maxlen)
		return IWARP_NLA_STR_LONG;
	if (memchr(p, '\0', len))
		return IWARP_NLA_STR_NUL;
	return IWARP_NLA_STR_OK;
}

static int iwarp_nla_validate(const struct nlattr *nla, struct netlink_ext_ack *extack)
{
	switch (nla_type(nla)) {
`)
	for _, a := range s.Attributes {
		c := s.attrC(a.Name)
		fmt.Fprintf(&b, "\tcase %s:\n", c)
		switch a.Type {
		case "string":
			fmt.Fprintf(&b, "\t\tswitch (iwarp_nla_string(nla, %d)) {\n", a.MaxLen)
			fmt.Fprintf(&b, "\t\tcase IWARP_NLA_STR_OK:\n\t\t\treturn 0;\n")
			fmt.Fprintf(&b, "\t\tcase IWARP_NLA_STR_EMPTY:\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: empty\");\n\t\t\treturn -EINVAL;\n", c)
			fmt.Fprintf(&b, "\t\tcase IWARP_NLA_STR_LONG:\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: longer than %d bytes\");\n\t\t\treturn -ENAMETOOLONG;\n", c, a.MaxLen)
			fmt.Fprintf(&b, "\t\tcase IWARP_NLA_STR_NUL:\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: contains a NUL byte\");\n\t\t\treturn -EINVAL;\n\t\t}\n\t\treturn -EINVAL;\n", c)
		case "binary":
			if len(a.Lens) > 0 {
				conds := make([]string, len(a.Lens))
				for i, l := range a.Lens {
					conds[i] = fmt.Sprintf("nla_len(nla) != %d", l)
				}
				fmt.Fprintf(&b, "\t\tif (%s) {\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: must be %s bytes\");\n\t\t\treturn -EINVAL;\n\t\t}\n", strings.Join(conds, " && "), c, lensText(a.Lens))
			} else {
				fmt.Fprintf(&b, "\t\tif (nla_len(nla) > %d) {\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: longer than %d bytes\");\n\t\t\treturn -EMSGSIZE;\n\t\t}\n", a.MaxLen, c, a.MaxLen)
			}
			b.WriteString("\t\treturn 0;\n")
		default:
			size := map[string]int{"u8": 1, "u16": 2, "u32": 4, "u64": 8}[a.Type]
			fmt.Fprintf(&b, "\t\tif (nla_len(nla) != %d) {\n\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: must be a %s (%d bytes)\");\n\t\t\treturn -EINVAL;\n\t\t}\n", size, c, a.Type, size)
			switch {
			case a.Flags != "":
				d := s.def(a.Flags)
				fmt.Fprintf(&b, "\t\tif (nla_get_u32(nla) & ~%s) {\n", s.flagsAllC(d))
				fmt.Fprintf(&b, "\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: unknown flag bits\");\n", c)
				b.WriteString("\t\t\treturn -EOPNOTSUPP;\n\t\t}\n")
			case a.Enum != "":
				d := s.def(a.Enum)
				get := map[string]string{"u8": "nla_get_u8", "u16": "nla_get_u16", "u32": "nla_get_u32", "u64": "nla_get_u64"}[a.Type]
				fmt.Fprintf(&b, "\t\tif (%s(nla) > %s) {\n", get, s.enumMaxC(d))
				fmt.Fprintf(&b, "\t\t\tNL_SET_ERR_MSG_ATTR(extack, nla, \"%s: unknown value\");\n", c)
				b.WriteString("\t\t\treturn -ERANGE;\n\t\t}\n")
			}
			b.WriteString("\t\treturn 0;\n")
		}
	}
	b.WriteString("\t}\n\treturn 0;\n}\n\n")

	// Per-command policies: only the attributes a command takes.
	for _, c := range s.Commands {
		fn := strings.ReplaceAll(c.Name, "-", "_")
		fmt.Fprintf(&b, "static const struct nla_policy iwarp_%s_policy[%s_A_MAX + 1] = {\n", fn, s.CPrefix)
		for _, a := range append(append([]string{}, c.Request.Required...), c.Request.Optional...) {
			fmt.Fprintf(&b, "\t[%s] = NLA_POLICY_VALIDATE_FN(NLA_BINARY, iwarp_nla_validate),\n", s.attrC(a))
		}
		b.WriteString("};\n\n")
	}

	// Required attributes are checked before a doit handler runs.
	// The split op on 6.2 and later; kmod/compat.h names 6.1's genl_ops so.
	b.WriteString(`static int iwarp_nl_pre_doit(const struct genl_split_ops *ops,
			     struct sk_buff *skb, struct genl_info *info)
{
	switch (ops->cmd) {
`)
	for _, c := range s.Commands {
		if len(c.Request.Required) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\tcase %s:\n", s.cmdC(c.Name))
		for _, a := range c.Request.Required {
			fmt.Fprintf(&b, "\t\tif (GENL_REQ_ATTR_CHECK(info, %s)) {\n", s.attrC(a))
			fmt.Fprintf(&b, "\t\t\tNL_SET_ERR_MSG(info->extack, \"%s: required\");\n", s.attrC(a))
			b.WriteString("\t\t\treturn -EINVAL;\n\t\t}\n")
		}
		b.WriteString("\t\tbreak;\n")
	}
	b.WriteString("\t}\n\treturn 0;\n}\n\n")

	b.WriteString("static const struct genl_ops iwarp_nl_ops[] = {\n")
	for _, c := range s.Commands {
		fn := strings.ReplaceAll(c.Name, "-", "_")
		b.WriteString("\t{\n")
		fmt.Fprintf(&b, "\t\t.cmd = %s,\n", s.cmdC(c.Name))
		if !c.NoDo {
			fmt.Fprintf(&b, "\t\t.doit = iwarp_nl_%s_doit,\n", fn)
		}
		if c.Dump {
			fmt.Fprintf(&b, "\t\t.dumpit = iwarp_nl_%s_dumpit,\n", fn)
		}
		fmt.Fprintf(&b, "\t\t.policy = iwarp_%s_policy,\n", fn)
		fmt.Fprintf(&b, "\t\t.maxattr = %s_A_MAX,\n", s.CPrefix)
		if c.Admin {
			b.WriteString("\t\t.flags = GENL_UNS_ADMIN_PERM,\n")
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("};\n\n")

	b.WriteString("static const struct genl_multicast_group iwarp_nl_mcgrps[] = {\n")
	for _, g := range s.McastGroups {
		flags := ""
		if g.Admin {
			flags = ", .flags = GENL_MCAST_CAP_NET_ADMIN"
		}
		fmt.Fprintf(&b, "\t[IWARP_NL_MCGRP_%s] = { .name = %s_MCGRP_%s%s },\n", upper(g.Name), s.CPrefix, upper(g.Name), flags)
	}
	b.WriteString("};\n\n")
	fmt.Fprintf(&b, `struct genl_family iwarp_nl_family __ro_after_init = {
	.name = %s_GENL_NAME,
	.version = %s_GENL_VERSION,
	.maxattr = %s_A_MAX,
	.netnsok = true,
	.parallel_ops = true,
	.pre_doit = iwarp_nl_pre_doit,
	.ops = iwarp_nl_ops,
	.n_ops = ARRAY_SIZE(iwarp_nl_ops),
	.mcgrps = iwarp_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(iwarp_nl_mcgrps),
	.module = THIS_MODULE,
};
`, s.CPrefix, s.CPrefix, s.CPrefix)
	return b.String()
}

func (s *spec) goSource() string {
	var b strings.Builder
	b.WriteString("// SPDX-License-Identifier: BSD-3-Clause\n\n")
	fmt.Fprintf(&b, "// Code generated by netlinkproto/gen from netlinkproto/iwarp.yaml. DO NOT EDIT.\n\n")
	b.WriteString("package netlinkproto\n\n")
	fmt.Fprintf(&b, "// Family identity.\nconst (\n\tFamilyName    = %q\n\tFamilyVersion = %d\n)\n\n", s.Name, s.Version)
	b.WriteString("// Multicast groups.\nconst (\n")
	for _, g := range s.McastGroups {
		fmt.Fprintf(&b, "\t// Group%s: %s\n\tGroup%s = %q\n", camel(g.Name), g.Doc, camel(g.Name), g.Name)
	}
	b.WriteString(")\n\n")
	b.WriteString("// Commands (enum iwarp_cmd).\nconst (\n\tCmdUnspec uint8 = 0\n")
	for i, c := range s.Commands {
		fmt.Fprintf(&b, "\tCmd%s uint8 = %d // %s\n", camel(c.Name), i+1, s.cmdC(c.Name))
	}
	fmt.Fprintf(&b, "\tCmdMax uint8 = %d\n)\n\n", len(s.Commands))
	b.WriteString("// Attributes (enum iwarp_attr).\nconst (\n\tAttrUnspec uint16 = 0\n")
	for i, a := range s.Attributes {
		fmt.Fprintf(&b, "\tAttr%s uint16 = %d // %s\n", camel(a.Name), i+1, s.attrC(a.Name))
	}
	fmt.Fprintf(&b, "\tAttrMax uint16 = %d\n)\n\n", len(s.Attributes))
	for _, d := range s.Definitions {
		typ := "uint32"
		fmt.Fprintf(&b, "// %s: %s (enum %s).\nconst (\n", camel(d.Name), d.Doc, s.enumType(d))
		for i, e := range d.Entries {
			if d.Type == "flags" {
				fmt.Fprintf(&b, "\t%sF%s %s = 1 << %d // %s\n", camel(strings.TrimSuffix(d.Name, "-flags")), camel(e.Name), typ, i, s.entryC(d, e))
			} else {
				fmt.Fprintf(&b, "\t%s%s %s = %d // %s\n", camel(d.Name), camel(e.Name), typ, i, s.entryC(d, e))
			}
		}
		if d.Type == "flags" {
			fmt.Fprintf(&b, "\t%sFAll %s = 1<<%d - 1\n", camel(strings.TrimSuffix(d.Name, "-flags")), typ, len(d.Entries))
		} else {
			fmt.Fprintf(&b, "\t%sMax %s = %d\n", camel(d.Name), typ, len(d.Entries)-1)
		}
		b.WriteString(")\n\n")
	}
	b.WriteString("// AttrNames maps attribute types to their C names, for messages.\nvar AttrNames = map[uint16]string{\n")
	for i, a := range s.Attributes {
		fmt.Fprintf(&b, "\t%d: %q,\n", i+1, s.attrC(a.Name))
	}
	b.WriteString("}\n\n")
	b.WriteString("// CNames maps every C constant of uapi/iwarp.h to its value; tests compare it with the header.\nvar CNames = map[string]uint64{\n")
	for i, c := range s.Commands {
		fmt.Fprintf(&b, "\t%q: %d,\n", s.cmdC(c.Name), i+1)
	}
	for i, a := range s.Attributes {
		fmt.Fprintf(&b, "\t%q: %d,\n", s.attrC(a.Name), i+1)
	}
	for _, d := range s.Definitions {
		for i, e := range d.Entries {
			v := uint64(i)
			if d.Type == "flags" {
				v = 1 << i
			}
			fmt.Fprintf(&b, "\t%q: %d,\n", s.entryC(d, e), v)
		}
	}
	b.WriteString("}\n")
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		log.Fatalf("generated Go does not parse: %v", err)
	}
	return string(out)
}

// lensText lists allowed lengths: "4 or 16".
func lensText(lens []int) string {
	parts := make([]string, len(lens))
	for i, l := range lens {
		parts[i] = fmt.Sprint(l)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
