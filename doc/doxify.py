#!/usr/bin/env python3
"""doc/doxify.py - turn the header comments that document public names into
Doxygen comments, in place; idempotent, so it can run again after others
edit the headers.

    python3 doc/doxify.py include/tally/*.h include/tally/*/*.h

- A file's opening comment becomes its @file block.
- A comment directly above (blank lines allowed) the declaration of a public
  name - a function tally_*(), a macro TALLY_*, a struct, union or enum
  tally_*, a typedef tally_*, a member of a public struct - opens with
  "/**" instead of "/*".
- A comment at the end of a public struct member's line becomes "/**<".
Private names (tally__*, TALLY__*) keep plain comments: Doxygen leaves them
out (EXCLUDE_SYMBOLS). tests/doc.sh then fails on whatever public name is
still without a comment.
"""
import re
import sys

PUBLIC_FN = re.compile(r"\b(tally_[a-z0-9][a-z0-9_]*)\s*\(")
PUBLIC_DEFINE = re.compile(r"^\s*#\s*define\s+(TALLY_[A-Z0-9][A-Z0-9_]*)\b")
PUBLIC_TYPE = re.compile(r"^\s*(?:typedef\s+)?(?:struct|union|enum)\s+(tally_[a-z0-9][a-z0-9_]*)\s*\{")
PUBLIC_TYPEDEF = re.compile(r"^\s*typedef\b.*\b(tally_[a-z0-9][a-z0-9_]*)\b[^;]*;")
PUBLIC_TYPEDEF_FN = re.compile(r"^\s*typedef\b.*\(\s*\*\s*(tally_[a-z0-9][a-z0-9_]*)\s*\)")
STRUCT_OPEN = re.compile(r"^\s*(?:typedef\s+)?(struct|union|enum)\s+(tally_?[a-z0-9_]*)\s*\{")
# A member: a declaration ending in ';' whose declared name is public (not
# tally__*): the last identifier before '[', ')' or ';'.
MEMBER = re.compile(r"^\s*[A-Za-z_][^;/]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[[^\]]*\])*\s*(?:\)\s*\([^;]*\))?\s*;")
ENUMERATOR = re.compile(r"^\s*(TALLY_[A-Z0-9][A-Z0-9_]*)\s*(?:=[^,/]*)?,?")


def decl_name(lines, i, in_struct):
    """The public name declared at lines[i] (skipping preprocessor
    conditionals that do not declare), or None."""
    n = len(lines)
    while i < n:
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        m = PUBLIC_DEFINE.match(lines[i])
        if m:
            return m.group(1)
        if re.match(r"#\s*(if|ifdef|ifndef|else|elif)\b", s):
            # "#ifndef TALLY_X" then "#define TALLY_X": the define; "#if
            # TALLY__API_BODY": the function below it.
            i += 1
            continue
        if s.startswith("#"):
            return None
        if s.startswith("/*") or s.startswith("//"):
            return None
        if in_struct:
            if in_struct == "enum":
                m = ENUMERATOR.match(lines[i])
                return m.group(1) if m else None
            m = MEMBER.match(lines[i])
            if m and not m.group(1).startswith("tally__"):
                return m.group(1)
            # a nested struct/union member opening
            m = STRUCT_OPEN.match(lines[i])
            if m:
                return m.group(2) or "(anonymous)"
            return None
        for rx in (PUBLIC_TYPE, PUBLIC_TYPEDEF_FN, PUBLIC_TYPEDEF):
            m = rx.match(lines[i])
            if m:
                return m.group(1)
        # A function: the declaration may span lines up to its '('.
        head = lines[i]
        j = i
        while "(" not in head and j + 1 < n and j - i < 3 and ";" not in head and "{" not in head:
            j += 1
            head += " " + lines[j]
        m = PUBLIC_FN.search(head)
        if m and re.match(r"\s*(static|TALLY__|extern|void|int|unsigned|long|const|struct|"
                          r"enum|tally_|size_t|uint|bool|double|char|_Bool)", head):
            # the first identifier followed by '(' must be the public one
            first = re.search(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", head)
            if first and first.group(1) == m.group(1):
                return m.group(1)
        return None
    return None


def convert(text):
    lines = text.split("\n")
    out = []
    n = len(lines)
    depth_stack = []  # per open brace: "struct"/"enum" when public, else ""
    i = 0
    first_comment = True
    while i < n:
        line = lines[i]
        stripped = line.strip()
        in_struct = depth_stack[-1] if depth_stack else ""
        # The file's opening comment.
        if first_comment and stripped.startswith("/*"):
            first_comment = False
            if not stripped.startswith("/**"):
                if stripped == "/*":
                    out.append(line.replace("/*", "/**", 1))
                    out.append(" * @file")
                else:
                    out.append(line.replace("/*", "/**\n * @file\n *", 1))
            else:
                out.append(line)
            # copy the rest of the comment
            while "*/" not in lines[i]:
                i += 1
                out.append(lines[i])
            i += 1
            continue
        if stripped and not stripped.startswith("/*"):
            first_comment = False
        # A block comment starting on its own line.
        if stripped.startswith("/*") and not stripped.startswith("/**"):
            j = i
            while "*/" not in lines[j]:
                j += 1
            # A one-line section banner ("/* ---- name ---- */") heads what
            # follows; it documents nothing.
            banner = j == i and re.match(r"\s*/\*\s*-{2,}.*\*/\s*$", line)
            # Outside a struct, an indented comment is inside a function
            # body: it documents a statement, not a public name.
            inner = in_struct == "" and line[:1] in (" ", "\t")
            if in_struct in ("", "struct", "enum") and not banner and not inner:
                name = decl_name(lines, j + 1, in_struct)
                if name and not name.startswith("tally__") and not name.startswith("TALLY__") \
                        and not re.match(r"TALLY_[A-Z0-9_]*_H$", name):
                    line = line.replace("/*", "/**", 1)
            out.append(line)
            out.extend(lines[i + 1:j + 1])
            i = j + 1
            continue
        # Track braces of public structs for members' trailing comments.
        code = re.sub(r"/\*.*?\*/", "", line)
        code = re.sub(r"//.*", "", code)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        m = STRUCT_OPEN.match(line)
        opens = code.count("{")
        closes = code.count("}")
        # Trailing comment of a public member or enumerator.
        if in_struct in ("struct", "enum") and "/*" in line and not stripped.startswith("/*"):
            mm = MEMBER.match(line) if in_struct == "struct" else ENUMERATOR.match(line)
            decl = line[:line.index("/*")]
            if mm and not mm.group(1).startswith("tally__") and "/**<" not in line and \
                    "{" not in decl and "}" not in decl:
                line = re.sub(r"/\*(?!\*)", "/**<", line, count=1)
        out.append(line)
        for _ in range(opens):
            if m and (m.group(2).startswith("tally_") and not m.group(2).startswith("tally__")
                      or (in_struct == "struct" and m.group(2) == "")):
                depth_stack.append("enum" if m.group(1) == "enum" else "struct")
                m = None
            else:
                depth_stack.append("")
        for _ in range(closes):
            if depth_stack:
                depth_stack.pop()
        i += 1
    return "\n".join(out)


def group_defines(text):
    """A /** comment followed, with no blank line, by preprocessor lines
    holding two or more public #defines documents them all: wrap the
    comment and the run in a Doxygen member group (DISTRIBUTE_GROUP_DOC
    gives each member the comment)."""
    lines = text.split("\n")
    out = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.strip().startswith("/**") and not line.strip().startswith("/**<") and \
                "@file" not in line and (i + 1 >= n or "@file" not in lines[i + 1]):
            j = i
            while "*/" not in lines[j]:
                j += 1
            k = j + 1
            defines = 0
            while k < n and lines[k].strip().startswith("#"):
                if PUBLIC_DEFINE.match(lines[k]) and not re.match(r".*_H$", lines[k].split()[-1]):
                    defines += 1
                while lines[k].rstrip().endswith("\\") and k + 1 < n:
                    k += 1
                if re.match(r"\s*#\s*(if|ifdef|ifndef|else|elif|endif)\b", lines[k]) and \
                        not re.match(r"\s*#\s*(ifndef|endif)\b", lines[k]):
                    break
                k += 1
            prev = out[-1].strip() if out else ""
            if defines >= 2 and prev != "/**@{*/":
                indent = re.match(r"\s*", line).group(0)
                out.append(indent + "/**@{*/")
                out.extend(lines[i:k])
                out.append(indent + "/**@}*/")
                i = k
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def main(paths):
    changed = 0
    for p in paths:
        with open(p) as f:
            text = f.read()
        new = group_defines(convert(text))
        if new != text:
            with open(p, "w") as f:
                f.write(new)
            changed += 1
    print("doxify: %d of %d files changed" % (changed, len(paths)), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
