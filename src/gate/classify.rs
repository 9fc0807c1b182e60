//! Pure classification of one tool call (SPEC §Gate, the rule table).
//!
//! Shell commands are matched against an ordered table of rules (first destructive
//! rule wins; a command is read-only only when every part of it is a known reader);
//! file tools are judged by their path (inside the workdir: reversible, because the
//! snapshot store can restore it; outside it, or inside `.git/` / `.loopexec/`:
//! destructive). Independent of the class, the halt-conditions checks add findings:
//!
//! | finding               | when                                                  | severity |
//! |-----------------------|-------------------------------------------------------|----------|
//! | secrets_exposure      | content being written holds a credential              | critical |
//! | privilege_escalation  | `sudo`/`su`/`doas`, `chmod`/`chown` of system paths    | high     |
//! | production_context    | a command names a `[gate] production` context          | high     |
//! | modifying_unread_code | an edit of an existing file not read earlier this run | medium   |
//!
//! A critical finding declines the call even where a person could confirm it.

use super::{ActionClass, Classification, Finding, GatePolicy, ToolCall};
use regex::Regex;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

/// What the classifier knows besides the call.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The run's workdir (absolute), when known.
    pub workdir: Option<&'a Path>,
    /// Files (absolute, normalized) the agent read earlier in this run.
    pub read: &'a BTreeSet<String>,
    /// The call's target file exists now (for Write).
    pub target_exists: bool,
    /// The target's deepest existing ancestor, with symlinks resolved, lies outside
    /// the (resolved) workdir although its path names a place inside it: a write
    /// through a symlinked directory. Computed by the caller
    /// ([`escapes_by_symlink`]); the classifier itself touches no file system.
    pub escapes_by_symlink: bool,
    /// How a shell command's path operand inside the workdir is resolved through the
    /// symlinks that exist now (`Some(escapes_by_symlink)` from the gate; `None` in
    /// the classifier's own tests): `rm -rf e/` where `e` is a link to `/etc` deletes
    /// outside the tree (a review's allowed call).
    pub resolve: Option<fn(&str, &Path) -> bool>,
}

/// Whether `target` (absolute, normalized) names a place inside `workdir` but its
/// deepest existing ancestor resolves (symlinks followed) outside the resolved
/// `workdir`. Reads the file system.
#[must_use]
pub fn escapes_by_symlink(target: &str, workdir: &Path) -> bool {
    let t = Path::new(target);
    if !t.starts_with(workdir) {
        return false;
    }
    let Ok(real_w) = std::fs::canonicalize(workdir) else {
        return false;
    };
    let mut probe = t.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&probe) {
            return !real.starts_with(&real_w);
        }
        if !probe.pop() {
            return false;
        }
    }
}

/// One built-in shell rule: id, pattern, and the finding it adds (if any).
struct Rule {
    id: &'static str,
    pattern: &'static str,
    finding: Option<(&'static str, &'static str)>,
}

/// Destructive shell rules, in order (SPEC §Gate lists them with an example each).
const DESTRUCTIVE: &[Rule] = &[
    Rule {
        id: "privilege-escalation",
        pattern: r"(^|[;&|(]\s*|\s)(sudo|doas|su)\s",
        finding: Some(("privilege_escalation", "high")),
    },
    Rule {
        id: "chmod-system-path",
        pattern: r"\b(chmod|chown|chgrp)\b[^;&|]*\s/((etc|usr|bin|sbin|lib|lib64|boot|var|opt|root|sys|proc)\b|\*|\s|$)",
        finding: Some(("privilege_escalation", "high")),
    },
    Rule {
        id: "git-push-force",
        pattern: r"\bgit\s+((-c|-C)\s+\S+\s+|--(git-dir|work-tree|namespace)=\S+\s+)*push\b[^;&|]*(\s--force(-with-lease)?\b|\s--mirror\b|\s-[a-zA-Z]*f\b|\s\+[^\s]+)",
        finding: None,
    },
    Rule {
        id: "git-reset-hard",
        pattern: r"\bgit\s+((-c|-C)\s+\S+\s+|--(git-dir|work-tree)=\S+\s+)*reset\b[^;&|]*\s--hard\b",
        finding: None,
    },
    Rule {
        id: "git-clean-force",
        pattern: r"\bgit\s+((-c|-C)\s+\S+\s+|--(git-dir|work-tree)=\S+\s+)*clean\b[^;&|]*\s-[a-zA-Z]*f",
        finding: None,
    },
    Rule {
        id: "git-branch-delete",
        pattern: r"\bgit\s+((-c|-C)\s+\S+\s+|--(git-dir|work-tree)=\S+\s+)*(branch\s+-D|push\s+[^;&|]*--delete|push\s+\S+\s+:)",
        finding: None,
    },
    Rule {
        id: "delete-outside-tree",
        pattern: r"\b(rm|rmdir|shred|unlink)\b[^;&|]*\s['\x22]?(/|~|\$\{?HOME\b|\.\./)|\brm\b[^;&|]*\s-[a-zA-Z]*[rR][a-zA-Z]*\b[^;&|]*\s['\x22]?(\.|\./?\*|\*)['\x22]?(\s|$|[;&|])",
        finding: None,
    },
    Rule {
        id: "git-history-rewrite",
        pattern: r"\bgit\s+((-c|-C)\s+\S+\s+|--(git-dir|work-tree)=\S+\s+)*(update-ref\s+-d|filter-branch|filter-repo|reflog\s+(expire|delete)|stash\s+(clear|drop)|gc\b[^;&|]*--prune=now)\b",
        finding: None,
    },
    Rule {
        id: "find-delete",
        pattern: r"\bfind\b[^;&|]*\s(-delete|-exec\s+(rm|shred|unlink))\b|\bxargs\b[^;&|]*\b(rm|shred|unlink)\b",
        finding: None,
    },
    Rule {
        id: "write-outside-tree",
        pattern: r"(>>?\s*|\btee\s+(-a\s+)?|\bdd\b[^;&|]*\bof=)(~|\$HOME|/(etc|usr|bin|sbin|lib|lib64|boot|var|opt|root|home|srv|dev/[sh]d|dev/nvme))|\b(cp|mv|install|ln)\b[^;&|]*\s(~|\$HOME|/(etc|usr|bin|sbin|lib|lib64|boot|var|opt|root|home|srv))\S*\s*($|[;&|])",
        finding: None,
    },
    Rule {
        id: "loopexec-state",
        pattern: r"\b(rm|mv|truncate|shred|unlink)\b[^;&|]*(^|[\s/'\x22])\.(loopexec|git)(/|\s|$|['\x22])|>>?\s*\S*\.loopexec/|\bloopexec\s+(release|ack|confirm|deny)\b",
        finding: None,
    },
    Rule {
        id: "decoded-or-inline-delete",
        pattern: r"base64\s+(-d|--decode)[^;&]*\|\s*(ba|z|da)?sh\b|(shutil\.rmtree|os\.(remove|unlink|rmdir)|fs\.(rm|rmSync|unlinkSync|rmdirSync)|File\.delete)\s*\(",
        finding: None,
    },
    Rule {
        id: "sql-drop",
        pattern: r"(?i)\b(drop\s+(table|database|schema|index)|truncate\s+table|delete\s+from)\b",
        finding: None,
    },
    Rule {
        id: "http-mutating-request",
        pattern: r"\b(curl|wget|http|xh)\b[^;&|]*(\s-X\s*(POST|PUT|DELETE|PATCH)\b|--request[ =](POST|PUT|DELETE|PATCH)\b|\s(-d|--data[a-z-]*|--form|-F|--method[ =](POST|PUT|DELETE|PATCH)|--post-data)\b)",
        finding: None,
    },
    Rule {
        id: "cloud-delete",
        pattern: r"\b(aws\s+\S+\s+(delete|terminate|remove|rm|rb)[a-z-]*|gcloud\s+[^;&|]*\bdelete\b|az\s+[^;&|]*\bdelete\b|doctl\s+[^;&|]*\bdelete\b|gh\s+(repo|release|secret|variable|run|cache)\s+delete\b|docker\s+(system|volume|image|container)\s+prune\b|docker\s+volume\s+rm\b)",
        finding: None,
    },
    Rule {
        id: "cluster-change",
        pattern: r"\b(kubectl\b[^;&|]*\s(delete|drain|cordon|scale|apply|replace|patch)|helm\s+(uninstall|delete|upgrade|install)|terraform\s+(destroy|apply)|pulumi\s+(destroy|up))\b",
        finding: None,
    },
    Rule {
        id: "disk-format",
        pattern: r"\b(mkfs(\.\w+)?|mkswap|wipefs|fdisk|parted|sgdisk)\b|\bdd\b[^;&|]*\bof=/dev/",
        finding: None,
    },
    Rule {
        // a command word the gate cannot read before the shell expands it
        // (`x=rm; $x -rf /`): it may be anything
        id: "indirect-command",
        pattern: r"(^|[;&|(]\s*)['\x22]?\$\{?[A-Za-z_]\w*\}?['\x22]?(\s|$)|(^|[;&|(]\s*)eval\s",
        finding: None,
    },
    Rule {
        // killing every process the user may signal (`kill -9 -1`), init, or
        // processes picked by name (`pkill -f loopexec`, `killall node`): a name
        // pattern reaches past what the agent started, loopexec itself included
        id: "process-kill",
        pattern: r"(^|[;&|(]\s*|\s)(pkill|killall|killall5)\b|(^|[;&|(]\s*)kill\b[^;&|]*\s(--\s+)?-?1\s*($|[;&|])",
        finding: None,
    },
    Rule {
        // the machine's own state: its crontab (`crontab -r`, or a file installed
        // over it), services, power (a review's calls the gate allowed)
        id: "system-change",
        pattern: r"(^|[;&|(]\s*)(crontab\s+(-[a-km-z]*[ri]|[^-\s;&|]|-\s|-$)|systemctl\s+(--user\s+|--system\s+|--now\s+)*(stop|disable|mask|kill|restart|reload|isolate|poweroff|reboot|halt|edit|set-property|daemon-reload|reset-failed)\b|service\s+\S+\s+(stop|restart|reload)\b|(shutdown|reboot|poweroff|halt)(\s|$)|init\s+[06]\b|launchctl\s+(unload|remove|stop|bootout|kill)\b)",
        finding: None,
    },
    Rule {
        id: "credential-read",
        pattern: r"(\.ssh/(id_[a-z0-9]+|[a-z_]*key)|\.aws/credentials|\.netrc|\.pgpass|\.docker/config\.json|\.kube/config|\.gnupg/|\.config/gcloud/|\.pem\b|\.p12\b|/etc/shadow)",
        finding: None,
    },
    Rule {
        id: "agent-hook-config",
        pattern: r"(>>?\s*|\btee\s+(-a\s+)?|\b(cp|mv|rm|ln|install|sed\s+-i|truncate)\b[^;&|]*)\S*\.(claude/settings(\.local)?\.json|gemini/settings\.json|codex/config\.toml)",
        finding: None,
    },
    Rule {
        id: "package-publish",
        pattern: r"\b(npm\s+(publish|unpublish)|cargo\s+publish|twine\s+upload|gem\s+push|docker\s+push)\b",
        finding: None,
    },
];

/// Commands that only read (every `;`/`&&`/`|` part must be one of these).
const READERS: &str = r"^(cd|pushd|popd|ls|cat|head|tail|less|more|grep|egrep|fgrep|rg|ag|find|fd|pwd|echo|printf|wc|sort|uniq|cut|tr|diff|cmp|file|stat|du|df|which|type|whoami|id|date|uname|env|printenv|tree|jq|sed\s+-n|awk|git\s+(status|log|diff|show|branch|remote\s+-v|rev-parse|ls-files|blame|grep)|cargo\s+(check|tree|metadata)|crontab\s+-l|true)\b";

/// Credential files a file tool must not read.
const CREDENTIAL_PATH: &str = r"(/\.ssh/|/\.aws/credentials$|/\.netrc$|/\.pgpass$|/\.docker/config\.json$|/\.kube/config$|/\.gnupg/|\.pem$|\.p12$|\.key$|^/etc/shadow$|(^|/)\.env(\.[a-z]+)?$)";

fn re(p: &str) -> Regex {
    Regex::new(p).expect("built-in gate pattern compiles")
}

static DESTRUCTIVE_RE: LazyLock<Vec<Regex>> =
    LazyLock::new(|| DESTRUCTIVE.iter().map(|r| re(r.pattern)).collect());
static READERS_RE: LazyLock<Regex> = LazyLock::new(|| re(READERS));
static CREDENTIAL_RE: LazyLock<Regex> = LazyLock::new(|| re(CREDENTIAL_PATH));
static SPLIT_RE: LazyLock<Regex> = LazyLock::new(|| re(r"&&|\|\||[;|\n]"));

/// Tools that only read, by agent tool name (Claude Code and Gemini CLI).
const READ_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebSearch",
    "WebFetch",
    "TodoWrite",
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "search_file_content",
    "google_web_search",
    "web_fetch",
    "read",
];
/// Tools that write one file.
const WRITE_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
    "write",
    "edit",
];
/// Tools that run a shell command.
const SHELL_TOOLS: &[&str] = &["Bash", "run_shell_command", "shell", "bash"];
/// Claude Code's tools that touch neither files nor the outside world: a subagent
/// (`Task`: each of its own tool calls comes through the gate), reading or ending a
/// background shell the agent started (`BashOutput`, `KillShell`), leaving plan mode.
/// A new user's review had them declined as `unknown-tool`.
const AGENT_TOOLS: &[&str] = &["Task", "BashOutput", "KillShell", "ExitPlanMode"];

/// Normalizes `p` against `base` (no file system access: `..` is resolved lexically).
#[must_use]
pub fn normalize(p: &str, base: Option<&Path>) -> String {
    let path = Path::new(p);
    let joined: PathBuf = match (path.is_absolute(), base) {
        (true, _) | (false, None) => path.to_path_buf(),
        (false, Some(b)) => b.join(path),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out.display().to_string()
}

fn finding(halt_type: &str, severity: &str, description: String) -> Finding {
    Finding {
        halt_type: halt_type.into(),
        severity: severity.into(),
        description,
    }
}

fn has_secret(content: &str) -> bool {
    !content.is_empty() && crate::observe::secrets::redact(content.as_bytes()) != content.as_bytes()
}

/// Classifies one call. Pure: everything it needs is in its arguments.
#[must_use]
pub fn classify(call: &ToolCall, policy: &GatePolicy, ctx: &Context<'_>) -> Classification {
    let mut findings = Vec::new();
    let acts =
        SHELL_TOOLS.contains(&call.tool.as_str()) || WRITE_TOOLS.contains(&call.tool.as_str());
    let (class, rule) = if acts && call.target.trim().is_empty() {
        // a shell or write call whose command or path the gate cannot read (no
        // `tool_input`, a command that is not a string): it cannot be judged, so it
        // is not allowed (SPEC §12: fail closed)
        (ActionClass::Destructive, "unreadable-call".to_string())
    } else if SHELL_TOOLS.contains(&call.tool.as_str()) {
        shell(
            &call.target,
            policy,
            ctx,
            call.cwd.as_deref(),
            &mut findings,
        )
    } else if WRITE_TOOLS.contains(&call.tool.as_str()) {
        let path = normalize(&call.target, ctx.workdir);
        if has_secret(&call.content) {
            findings.push(finding(
                "secrets_exposure",
                "critical",
                format!("{} writes a credential into {}", call.tool, call.target),
            ));
        }
        let is_edit = !matches!(call.tool.as_str(), "Write" | "write_file" | "write");
        if (is_edit || ctx.target_exists) && !ctx.read.contains(&path) {
            findings.push(finding(
                "modifying_unread_code",
                "medium",
                format!(
                    "{} changes {} which the agent never read in this run",
                    call.tool, call.target
                ),
            ));
        }
        if ctx.escapes_by_symlink {
            (
                ActionClass::Destructive,
                "write-through-symlink".to_string(),
            )
        } else {
            file_write(&path, ctx.workdir)
        }
    } else if READ_TOOLS.contains(&call.tool.as_str()) {
        let path = normalize(&call.target, ctx.workdir);
        if CREDENTIAL_RE.is_match(&path) {
            (ActionClass::Destructive, "credential-read".to_string())
        } else {
            (ActionClass::ReadOnly, "read-tool".to_string())
        }
    } else if AGENT_TOOLS.contains(&call.tool.as_str()) {
        (ActionClass::ReadOnly, "agent-tool".to_string())
    } else {
        // An unknown tool may do anything: the gate cannot prove it harmless.
        (ActionClass::Destructive, "unknown-tool".to_string())
    };
    Classification {
        class,
        rule,
        findings,
    }
}

fn file_write(path: &str, workdir: Option<&Path>) -> (ActionClass, String) {
    let Some(w) = workdir else {
        return (ActionClass::Destructive, "write-without-workdir".into());
    };
    let p = Path::new(path);
    if !p.starts_with(w) {
        if AGENT_HOOK_CONFIG.iter().any(|c| p.ends_with(c)) {
            return (ActionClass::Destructive, "agent-hook-config".into());
        }
        return (ActionClass::Destructive, "write-outside-workdir".into());
    }
    let rel = p.strip_prefix(w).unwrap_or(p);
    if AGENT_HOOK_CONFIG.iter().any(|c| rel == Path::new(c)) {
        return (ActionClass::Destructive, "agent-hook-config".into());
    }
    if rel.starts_with(".git") || rel.starts_with(".loopexec") {
        return (
            ActionClass::Destructive,
            "write-loopexec-or-git-state".into(),
        );
    }
    (ActionClass::ReversibleWrite, "write-in-workdir".into())
}

/// The files through which an agent CLI runs hooks (the gate among them): a write to
/// one can switch the gate off.
const AGENT_HOOK_CONFIG: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".codex/config.toml",
];

/// Commands that change every file they name (`truncate -s 0 /etc/hosts`; `mv ~/.ssh
/// /tmp/x` removes its source).
const MUTATE_ALL: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "truncate", "touch", "chmod", "chown", "chgrp", "tee", "mv",
    "chattr", "setfacl", "mkdir", "patch", "sponge", "rimraf", "ed", "ex", "vi", "vim", "nvim",
    "nano", "emacs",
];
/// Commands that change only their last operand, the destination (`rsync -a --delete
/// /tmp/empty/ /root/`, `cp /dev/null ~/.bashrc`).
const MUTATE_LAST: &[&str] = &["cp", "install", "ln", "rsync", "uniq", "split"];
/// Interpreters whose inline code (`-c`, `-e`, `-r`) may write anywhere (besides
/// `python3.12` and the like).
const INLINE: &[&str] = &[
    "python", "node", "nodejs", "ruby", "perl", "php", "deno", "bun",
];
/// Wrappers that run the command after them (their own options and numeric
/// arguments are passed over).
const WRAPPERS: &[&str] = &[
    "env", "command", "exec", "nice", "nohup", "time", "busybox", "stdbuf", "timeout", "npx",
    "bunx", "pnpx",
];

/// True when `cmd` hands an interpreter its code on stdin: a heredoc or here-string
/// (`python3 <<'EOF'`, `node <<<`), `-` or `/dev/stdin` as the script.
fn stdin_code(cmd: &str) -> bool {
    static RE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(^|[;&|(]\s*|\s)(python[0-9.]*|node|nodejs|ruby|perl|php|deno|bun)\b[^;&|\n]*(<<|\s-(\s|$)|/dev/stdin)",
        )
    });
    RE.is_match(cmd)
}

/// The parts of a shell command between `;`, `&`, `|`, `&&`, `||` and newlines that
/// lie outside quotes (a `;` inside `python3 -c "a; b"` separates nothing).
fn segments(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in cmd.chars() {
        if escaped {
            escaped = false;
            cur.push(c);
            continue;
        }
        match c {
            '\\' if !single => {
                escaped = true;
                cur.push(c);
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            // `>|` is a redirection (clobber), not a pipe
            '|' if !single && !double && cur.ends_with('>') => cur.push(c),
            ';' | '&' | '|' | '\n' if !single && !double => {
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

/// Paths outside the workdir that a write may name harmlessly: the null device, the
/// standard streams, and scratch space.
fn harmless_outside(p: &str) -> bool {
    matches!(
        p,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero" | "/tmp"
    ) || ["/tmp/", "/var/tmp/", "/dev/fd/", "/proc/self/fd/"]
        .iter()
        .any(|d| p.starts_with(d))
}

/// The workdir a shell command is judged against, and how its paths are resolved
/// through existing symlinks ([`Context::resolve`]).
struct Place<'a> {
    workdir: &'a Path,
    resolve: Option<fn(&str, &Path) -> bool>,
}

/// `word` read as a path that lies outside the workdir (a relative path against `cwd`;
/// `~` and `$HOME` are outside; `--opt=PATH` is read as `PATH`; a path inside that an
/// existing symlink leads outside is outside), unless [`harmless_outside`]. A word the
/// shell expands before the command sees it (`$d`, `${D:-/etc}`, `` `…` ``, a brace
/// list `{/etc,x}`) may be anything: outside, as far as the gate can tell.
fn names_outside(word: &str, cwd: &Path, place: &Place<'_>) -> bool {
    let w = match word.split_once('=') {
        Some((k, v)) if k.starts_with("--") => v,
        _ => word,
    };
    if w.is_empty() || w.starts_with('-') {
        return false;
    }
    if w.starts_with('~')
        || w.contains('$')
        || w.contains('`')
        || (w.contains('{') && w.contains(',') && w.contains('}'))
    {
        return true;
    }
    let abs = normalize(w, Some(cwd));
    if Path::new(&abs).starts_with(place.workdir) {
        return place.resolve.is_some_and(|r| r(&abs, place.workdir));
    }
    !harmless_outside(&abs)
}

/// Inline code that writes, deletes, renames or runs commands (Python, node, Ruby,
/// Perl, PHP). Reading a file is not a write: `open('/etc/hosts').read()` passes.
static INLINE_WRITE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r#"\bopen\s*\([^)]*,\s*['"][^'"]*[wax+]"#,
        r#"|\bopen\s*\(?\s*[\w$]*\s*,\s*['"]\s*(\+?[>|]|\+<)"#,
        r"|\.\s*(write_text|write_bytes|unlink|rmdir|touch|chmod|rename|symlink_to|hardlink_to)\s*\(",
        r"|\bos\s*\.\s*(remove|unlink|rmdir|removedirs|rename|renames|replace|truncate|chmod|chown|symlink|link|system|popen|exec\w*|spawn\w*|write)\b",
        r"|\bshutil\s*\.\s*(rmtree|move|copy\w*|chown)\b|\bsubprocess\b|\bchild_process\b",
        r"|\b(execSync|spawnSync|execFileSync|rmSync|rmdirSync|unlinkSync|writeFileSync|appendFileSync|truncateSync|renameSync|copyFileSync|cpSync|chmodSync|symlinkSync|createWriteStream)\b",
        r"|\bfs\s*\.\s*(promises\s*\.\s*)?(rm|rmdir|unlink|writeFile|appendFile|rename|truncate|cp|copyFile|chmod)\s*\(",
        r"|\bFile(Utils)?\s*\.\s*(write|delete|unlink|rename|truncate|rm_rf|rm|mv)\b",
        r"|(^|[;{\s])(unlink|rename|truncate|rmdir|chmod|system)\b\s*[\(\s]",
        r"|\b(file_put_contents|unlink|rename)\s*\(",
        r"|\bDeno\s*\.\s*(remove|removeSync|writeFile|writeFileSync|writeTextFile|writeTextFileSync|truncate|truncateSync|rename|renameSync|chmod|chmodSync|run|Command)\b",
    ))
});
/// A place outside the tree named in inline code: an absolute or home path literal,
/// or the home directory looked up.
static INLINE_OUTSIDE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"['"`](/|~)|expanduser|Path\s*\.\s*home\s*\(|homedir\s*\(|\bHOME\b|\$ENV\s*\{|getenv\s*\("#,
    )
});

/// Why shell segment `seg` (run in `cwd`) changes something outside `workdir`: a file
/// command with an operand outside it (any operand of [`MUTATE_ALL`], the destination
/// of [`MUTATE_LAST`], the files of `sed -i` and `perl -i`), or inline interpreter
/// code that writes and names a place outside the tree. Words are split as the shell
/// splits them (`shlex`); `None` when the segment changes nothing outside, or cannot
/// be split (the shell would refuse it too).
fn changes_outside(seg: &str, cwd: &Path, place: &Place<'_>) -> Option<&'static str> {
    let words = shlex::split(seg)?;
    // `> FILE`, `>>FILE`, `2> FILE`, `&>FILE`
    for (k, w) in words.iter().enumerate() {
        let digits = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if let Some(rest) = digits.strip_prefix('>') {
            let rest = rest.trim_start_matches(['>', '|']);
            let target = if rest.is_empty() {
                words.get(k + 1)
            } else {
                None
            };
            let target = target.map_or(rest, String::as_str);
            if !target.starts_with('&') && names_outside(target, cwd, place) {
                return Some("write-outside-tree");
            }
        }
    }
    let mut i = 0;
    // `A=1 cmd`, `env -i cmd`, `nice -n 5 cmd`, `timeout 10 cmd`, `\rm`, `/bin/rm`
    let name = loop {
        let w = words.get(i)?;
        let base = w.trim_start_matches('\\');
        let base = base.rsplit('/').next().unwrap_or(base);
        let assignment = w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
        let wrapper_arg = i > 0
            && (w.starts_with('-')
                || w.trim_end_matches(['s', 'm', 'h', 'd'])
                    .parse::<f64>()
                    .is_ok());
        if assignment || wrapper_arg || WRAPPERS.contains(&base) {
            i += 1;
            continue;
        }
        break base.to_string();
    };
    let args = &words[i + 1..];
    let outside = |a: &String| names_outside(a, cwd, place);
    let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    // git's working tree, or any command's directory, put outside the workdir
    // (`git --work-tree=/ checkout -- .`, `GIT_WORK_TREE=/ git …`, `git -C /etc …`,
    // `make -C / clean`, `tar -x -C /`), and an output named by an option (`cp -t
    // DIR`, `curl -o FILE`, `wget -O FILE`/`-P DIR`, `sort -o FILE`, `unzip -d DIR`)
    let assigns_outside = words[..i].iter().any(|w| {
        w.split_once('=').is_some_and(|(k, v)| {
            matches!(k, "GIT_WORK_TREE" | "GIT_DIR") && names_outside(v, cwd, place)
        })
    });
    if assigns_outside {
        return Some("write-outside-tree");
    }
    let output_flag = |f: &str| -> bool {
        matches!(
            f,
            "-C" | "--directory"
                | "-t"
                | "--target-directory"
                | "--work-tree"
                | "--git-dir"
                | "--output"
                | "--output-document"
                | "--directory-prefix"
        ) || (f == "-o" && !matches!(name.as_str(), "python" | "node"))
            || (f == "-O" && name == "wget")
            || (f == "-P" && name == "wget")
            || (f == "-d" && name == "unzip")
    };
    let mut k = 0;
    while k < args.len() {
        let a = args[k].as_str();
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a, args.get(k + 1).cloned()),
        };
        if output_flag(flag) && value.as_ref().is_some_and(|v| names_outside(v, cwd, place)) {
            return Some("write-outside-tree");
        }
        // `-so FILE`: a short option cluster ending in the output flag
        let cluster_o = flag.len() > 2
            && flag.starts_with('-')
            && !flag.starts_with("--")
            && flag.ends_with('o')
            && name == "curl";
        if cluster_o && value.as_ref().is_some_and(|v| names_outside(v, cwd, place)) {
            return Some("write-outside-tree");
        }
        k += 1;
    }
    if name == "git"
        && operands.first().is_some_and(|c| c.as_str() == "clone")
        && operands.len() >= 3
        && operands.last().is_some_and(|a| outside(a))
    {
        return Some("write-outside-tree");
    }
    if MUTATE_ALL.contains(&name.as_str()) && operands.iter().any(|a| outside(a)) {
        return Some("write-outside-tree");
    }
    if MUTATE_LAST.contains(&name.as_str()) && operands.last().is_some_and(|a| outside(a)) {
        return Some("write-outside-tree");
    }
    let short = |a: &str| a.len() > 1 && a.starts_with('-') && !a.starts_with("--");
    let in_place = args
        .iter()
        .any(|a| a.starts_with("--in-place") || (short(a) && a[1..].contains('i')));
    if matches!(name.as_str(), "sed" | "perl") && in_place {
        // the files after the script: `-e SCRIPT` (or `-pie SCRIPT`) names it, else
        // sed's first operand is the script
        let (mut files, mut script_given, mut k) = (Vec::new(), false, 0);
        while k < args.len() {
            let a = &args[k];
            if short(a) && (a.ends_with('e') || a.ends_with('f')) {
                script_given = true;
                k += 2;
                continue;
            }
            if !a.starts_with('-') {
                files.push(a);
            }
            k += 1;
        }
        if name == "sed" && !script_given && !files.is_empty() {
            files.remove(0);
        }
        if files.iter().any(|a| outside(a)) {
            return Some("write-outside-tree");
        }
    }
    let interpreter = INLINE.contains(&name.as_str())
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if interpreter {
        let code_flag = |f: &str| {
            matches!(
                f,
                "-c" | "-e" | "-r" | "-E" | "-p" | "--eval" | "--print" | "eval"
            ) || (short(f) && f.ends_with('e'))
        };
        for p in args.windows(2).filter(|p| code_flag(&p[0])) {
            // code the shell builds (`-c "$(cat x.py)"`) cannot be read
            if p[1].contains("$(") || p[1].contains('`') {
                return Some("unreadable-inline-code");
            }
            if INLINE_WRITE_RE.is_match(&p[1]) && INLINE_OUTSIDE_RE.is_match(&p[1]) {
                return Some("inline-code-outside-tree");
            }
        }
    }
    None
}

/// The directory a `cd DIR` / `pushd DIR` segment moves to, normalized against
/// `cwd`; `None` when the segment is not one, or names no literal directory.
fn cd_target(seg: &str, cwd: &Path) -> Option<PathBuf> {
    let mut words = seg.split_whitespace();
    if !matches!(words.next(), Some("cd" | "pushd")) {
        return None;
    }
    let dir = words.next().unwrap_or("~").trim_matches(['\'', '"']);
    // a home (`~`, `~user`), the previous directory (`-`), or a place the shell works
    // out (`$OLDPWD`, `"$(dirname …)"`, `` `…` ``): not the tree, as far as the gate
    // can tell
    if dir.starts_with('~') || dir.contains('$') || dir.contains('`') || dir == "-" {
        return Some(PathBuf::from("/nonexistent-home"));
    }
    Some(PathBuf::from(normalize(dir, Some(cwd))))
}

fn shell(
    cmd: &str,
    policy: &GatePolicy,
    ctx: &Context<'_>,
    call_cwd: Option<&str>,
    findings: &mut Vec<Finding>,
) -> (ActionClass, String) {
    let workdir = ctx.workdir;
    // where the agent's shell stands: Claude Code's Bash keeps a `cd` between calls and
    // says where it is in the payload's `cwd` (a review's `cd /etc`, then `rm -rf
    // passwd`); a relative `cwd` is read against the workdir
    let start = |w: &Path| -> PathBuf {
        call_cwd
            .filter(|c| !c.trim().is_empty())
            .map_or_else(|| w.to_path_buf(), |c| PathBuf::from(normalize(c, Some(w))))
    };
    let mut destructive: Option<String> = None;
    for (rule, r) in DESTRUCTIVE.iter().zip(DESTRUCTIVE_RE.iter()) {
        if r.is_match(cmd) {
            if let Some((t, sev)) = rule.finding {
                findings.push(finding(t, sev, format!("`{cmd}` ({})", rule.id)));
            }
            destructive.get_or_insert_with(|| rule.id.to_string());
        }
    }
    for p in &policy.destructive {
        if Regex::new(p).is_ok_and(|r| r.is_match(cmd)) {
            destructive.get_or_insert_with(|| format!("gate.destructive {p:?}"));
        }
    }
    for name in &policy.production {
        let word = Regex::new(&format!(
            r"(^|[^A-Za-z0-9_-]){}($|[^A-Za-z0-9_-])",
            regex::escape(name)
        ));
        if word.is_ok_and(|r| r.is_match(cmd)) {
            findings.push(finding(
                "production_context",
                "high",
                format!("`{cmd}` names the production context {name:?}"),
            ));
            destructive.get_or_insert_with(|| "production-context".to_string());
        }
    }
    if let Some(rule) = destructive {
        return (ActionClass::Destructive, rule);
    }
    let parts: Vec<&str> = SPLIT_RE
        .split(cmd)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let extra: Vec<Regex> = policy
        .read_only
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect();
    let reads = |s: &str| READERS_RE.is_match(s) || extra.iter().any(|r| r.is_match(s));
    // `truncate -s 0 /etc/hosts`, `python3 -c "open('/root/.bashrc','w')"`, `sort -o
    // /etc/passwd`: a command that changes a file it names outside the workdir
    // (quote-aware segments, each in the directory the `cd`s before it moved to)
    if let Some(w) = workdir {
        let place = Place {
            workdir: w,
            resolve: ctx.resolve,
        };
        let mut cwd = start(w);
        for seg in segments(cmd) {
            let seg = seg.trim();
            if let Some(to) = cd_target(seg, &cwd) {
                cwd = to;
                continue;
            }
            // once a segment left the workdir, relative paths name things outside it
            // (`cd / && rm -rf etc`): anything but a reader there is destructive
            if !cwd.starts_with(w) && (!reads(seg) || seg.contains('>')) {
                return (ActionClass::Destructive, "write-after-leaving-tree".into());
            }
            if let Some(rule) = changes_outside(seg, &cwd, &place) {
                return (ActionClass::Destructive, rule.into());
            }
        }
    }
    if !parts.is_empty() && !cmd.contains('>') && parts.iter().all(|s| reads(s)) {
        return (ActionClass::ReadOnly, "read-only-command".into());
    }
    if let Some(w) = workdir {
        // a shell that stands outside the tree (the payload's `cwd`) writes there
        if !start(w).starts_with(w) {
            return (ActionClass::Destructive, "write-after-leaving-tree".into());
        }
        // code read from stdin or a heredoc (`python3 <<'EOF'`): the whole command is
        // the code
        if stdin_code(cmd) && INLINE_WRITE_RE.is_match(cmd) && INLINE_OUTSIDE_RE.is_match(cmd) {
            return (ActionClass::Destructive, "inline-code-outside-tree".into());
        }
    }
    (ActionClass::ReversibleWrite, "shell-in-workdir".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the classifier knows in workdir `/w` with nothing read and no symlink
    /// resolution (the pure classifier's usual context in these tests).
    fn in_w(read: &BTreeSet<String>) -> Context<'_> {
        Context {
            workdir: Some(Path::new("/w")),
            read,
            target_exists: false,
            escapes_by_symlink: false,
            resolve: None,
        }
    }

    fn bash(cmd: &str) -> ToolCall {
        ToolCall {
            agent: "claude".into(),
            phase: "pre".into(),
            tool: "Bash".into(),
            target: cmd.into(),
            ..ToolCall::default()
        }
    }

    /// One row per built-in rule (and the negatives next to them).
    #[test]
    fn shell_rule_table() {
        let policy = GatePolicy {
            production: vec!["prod-eu".into()],
            ..GatePolicy::default()
        };
        let rows: &[(&str, ActionClass, &str, Option<&str>)] = &[
            (
                "git push --force origin main",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            // a review's calls the gate allowed
            (
                "git -C . push --force origin main",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "git -C /tmp/x push -f origin main",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "rm -rf \"$HOME\"",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "rm -fr .",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "rm -rf *",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "x=rm; $x -rf /",
                ActionClass::Destructive,
                "indirect-command",
                None,
            ),
            (
                "mkfs.ext4 /dev/sda1",
                ActionClass::Destructive,
                "disk-format",
                None,
            ),
            (
                "gh repo delete owner/app --yes",
                ActionClass::Destructive,
                "cloud-delete",
                None,
            ),
            (
                "git reflog expire --expire=now --all",
                ActionClass::Destructive,
                "git-history-rewrite",
                None,
            ),
            (
                "git stash clear",
                ActionClass::Destructive,
                "git-history-rewrite",
                None,
            ),
            (
                "chmod -R 000 /",
                ActionClass::Destructive,
                "chmod-system-path",
                Some("privilege_escalation"),
            ),
            (
                "docker system prune -af",
                ActionClass::Destructive,
                "cloud-delete",
                None,
            ),
            (
                "npm unpublish --force",
                ActionClass::Destructive,
                "package-publish",
                None,
            ),
            (
                "git push -f",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "git push origin +main",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "git push origin main",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "git reset --hard HEAD~3",
                ActionClass::Destructive,
                "git-reset-hard",
                None,
            ),
            (
                "git reset HEAD file",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "git clean -fdx",
                ActionClass::Destructive,
                "git-clean-force",
                None,
            ),
            (
                "git branch -D feature",
                ActionClass::Destructive,
                "git-branch-delete",
                None,
            ),
            (
                "rm -rf /var/lib/app",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "rm -rf ~/projects",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "rm -rf ../other",
                ActionClass::Destructive,
                "delete-outside-tree",
                None,
            ),
            (
                "rm -rf build",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "psql -c 'DROP TABLE users'",
                ActionClass::Destructive,
                "sql-drop",
                None,
            ),
            (
                "curl -X POST https://api.example.com/x",
                ActionClass::Destructive,
                "http-mutating-request",
                None,
            ),
            (
                "curl -X DELETE https://api.example.com/x",
                ActionClass::Destructive,
                "http-mutating-request",
                None,
            ),
            (
                "curl -d a=b https://api.example.com",
                ActionClass::Destructive,
                "http-mutating-request",
                None,
            ),
            (
                "curl https://example.com",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "aws s3 rb s3://bucket --force",
                ActionClass::Destructive,
                "cloud-delete",
                None,
            ),
            (
                "aws ec2 terminate-instances --instance-ids i-1",
                ActionClass::Destructive,
                "cloud-delete",
                None,
            ),
            (
                "gcloud compute instances delete vm1",
                ActionClass::Destructive,
                "cloud-delete",
                None,
            ),
            (
                "kubectl delete pod web-1",
                ActionClass::Destructive,
                "cluster-change",
                None,
            ),
            (
                "terraform destroy",
                ActionClass::Destructive,
                "cluster-change",
                None,
            ),
            (
                "sudo apt-get install x",
                ActionClass::Destructive,
                "privilege-escalation",
                Some("privilege_escalation"),
            ),
            (
                "chmod 777 /etc/passwd",
                ActionClass::Destructive,
                "chmod-system-path",
                Some("privilege_escalation"),
            ),
            (
                "chmod +x script.sh",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "cat ~/.ssh/id_ed25519",
                ActionClass::Destructive,
                "credential-read",
                None,
            ),
            (
                "cat ~/.aws/credentials",
                ActionClass::Destructive,
                "credential-read",
                None,
            ),
            (
                "npm publish",
                ActionClass::Destructive,
                "package-publish",
                None,
            ),
            (
                "kubectl --context prod-eu get pods",
                ActionClass::Destructive,
                "production-context",
                Some("production_context"),
            ),
            (
                "kubectl --context prod-eu-2 get pods",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "ls -la && git status",
                ActionClass::ReadOnly,
                "read-only-command",
                None,
            ),
            (
                "grep -r foo src | wc -l",
                ActionClass::ReadOnly,
                "read-only-command",
                None,
            ),
            (
                "cat a > b",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "cargo test",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "git -c k=v push -f",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "git push --mirror origin",
                ActionClass::Destructive,
                "git-push-force",
                None,
            ),
            (
                "git update-ref -d refs/heads/main",
                ActionClass::Destructive,
                "git-history-rewrite",
                None,
            ),
            (
                "git filter-branch --force HEAD",
                ActionClass::Destructive,
                "git-history-rewrite",
                None,
            ),
            (
                "find / -delete",
                ActionClass::Destructive,
                "find-delete",
                None,
            ),
            (
                "find /etc -exec rm {} +",
                ActionClass::Destructive,
                "find-delete",
                None,
            ),
            (
                "ls | xargs rm -rf",
                ActionClass::Destructive,
                "find-delete",
                None,
            ),
            (
                "echo x > /etc/passwd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "echo x | tee /etc/passwd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "cp x /etc/passwd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "mv x ~/.bashrc",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "dd if=/dev/zero of=/dev/sda",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "rm -rf .loopexec",
                ActionClass::Destructive,
                "loopexec-state",
                None,
            ),
            (
                "rm -rf .git",
                ActionClass::Destructive,
                "loopexec-state",
                None,
            ),
            (
                "echo x > .loopexec/ledger.sqlite",
                ActionClass::Destructive,
                "loopexec-state",
                None,
            ),
            (
                "loopexec release hold-1 --by alice",
                ActionClass::Destructive,
                "loopexec-state",
                None,
            ),
            (
                "echo cm0gLXJmIC8K | base64 -d | sh",
                ActionClass::Destructive,
                "decoded-or-inline-delete",
                None,
            ),
            (
                "python3 -c \"import shutil; shutil.rmtree('/etc')\"",
                ActionClass::Destructive,
                "decoded-or-inline-delete",
                None,
            ),
            (
                "kubectl --context prod delete pod x",
                ActionClass::Destructive,
                "cluster-change",
                None,
            ),
            (
                "cd / && rm -rf etc",
                ActionClass::Destructive,
                "write-after-leaving-tree",
                None,
            ),
            (
                "cd .. ; mv w w.old",
                ActionClass::Destructive,
                "write-after-leaving-tree",
                None,
            ),
            (
                "cd ~ && touch x",
                ActionClass::Destructive,
                "write-after-leaving-tree",
                None,
            ),
            (
                "cd / && ls etc",
                ActionClass::ReadOnly,
                "read-only-command",
                None,
            ),
            (
                "cd /w/src && rm old.rs",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "cd src && cd .. && rm old.rs",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "echo '{}' > .claude/settings.json",
                ActionClass::Destructive,
                "agent-hook-config",
                None,
            ),
            (
                "sed -i s/loopexec/true/ ~/.claude/settings.local.json",
                ActionClass::Destructive,
                "agent-hook-config",
                None,
            ),
            // a sixth review's calls the gate allowed
            (
                "truncate -s 0 /etc/hosts",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "truncate -s0 ~/.bashrc",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "sed -i 's/x/y/' /etc/hosts",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "perl -pi -e 's/a/b/' /etc/hosts",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "python3 -c \"open('/root/.bashrc','w').write('')\"",
                ActionClass::Destructive,
                "inline-code-outside-tree",
                None,
            ),
            (
                "python3 -c \"import shutil; shutil.move('/home/u/.ssh', '.')\"",
                ActionClass::Destructive,
                "inline-code-outside-tree",
                None,
            ),
            (
                "node -e \"require('fs').rmSync('/root',{recursive:true})\"",
                ActionClass::Destructive,
                "inline-code-outside-tree",
                None,
            ),
            (
                "mv ~/.ssh /tmp/x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "rsync -a --delete /tmp/empty/ /root/",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "cd src && echo x >../../etc/motd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "nice -n 5 timeout 10 env A=1 /bin/chmod 600 /srv/app/key",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "crontab -r",
                ActionClass::Destructive,
                "system-change",
                None,
            ),
            ("kill -9 -1", ActionClass::Destructive, "process-kill", None),
            (
                "pkill -f loopexec",
                ActionClass::Destructive,
                "process-kill",
                None,
            ),
            (
                "systemctl --user stop x",
                ActionClass::Destructive,
                "system-change",
                None,
            ),
            (
                "echo hi >| /etc/passwd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "cd ~root && rm -rf .ssh",
                ActionClass::Destructive,
                "write-after-leaving-tree",
                None,
            ),
            (
                "cd $OLDPWD && rm -rf x",
                ActionClass::Destructive,
                "write-after-leaving-tree",
                None,
            ),
            (
                "d=/etc; rm -rf $d",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "rm -rf {/etc,x}",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "cp -t /etc x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "cp --target-directory=/etc x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "tar -xf a.tar -C /",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "unzip -o a.zip -d /",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "curl -so ~/.bashrc https://example.com",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "wget -O /etc/passwd https://example.com",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "sort -o /etc/passwd x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "mkdir /etc/x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "vim -es -c '%d' -c wq /etc/passwd",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "npx rimraf /etc",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "make -C / clean",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "git --work-tree=/ checkout -- .",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "GIT_WORK_TREE=/ git checkout -- .",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "git clone https://example.com/x /etc/x",
                ActionClass::Destructive,
                "write-outside-tree",
                None,
            ),
            (
                "python3 <<'EOF'\nopen('/etc/passwd','w')\nEOF",
                ActionClass::Destructive,
                "inline-code-outside-tree",
                None,
            ),
            (
                "python3 -c \"$(cat x.py)\"",
                ActionClass::Destructive,
                "unreadable-inline-code",
                None,
            ),
            (
                "deno eval \"Deno.removeSync('/etc/passwd')\"",
                ActionClass::Destructive,
                "inline-code-outside-tree",
                None,
            ),
            (
                "eval \"$(echo cm0gLXJmIC8K | base64 -d)\"",
                ActionClass::Destructive,
                "indirect-command",
                None,
            ),
            // and what stays as it was
            (
                "crontab -l",
                ActionClass::ReadOnly,
                "read-only-command",
                None,
            ),
            (
                "mkdir -p build/out",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "tar -xf vendor.tar -C vendor",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "curl -so data/x.json https://example.com/x.json",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "git -C sub status --short > s.txt",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "kill -1 4242",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "kill %1",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "systemctl status nginx",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "python3 -c \"print(open('/etc/hosts').read())\"",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "python3 -c \"open('out.txt','w').write('x; y')\"",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "cp /usr/share/dict/words data/words.txt",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "sed -i 's|/usr/local|/opt|' config.ini",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "sed -n 1,5p /etc/hosts > head.txt",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "pytest -q --basetemp=/tmp/pt > /tmp/log.txt 2>&1",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
            (
                "ln -s /usr/lib/libfoo.so vendor/libfoo.so",
                ActionClass::ReversibleWrite,
                "shell-in-workdir",
                None,
            ),
        ];
        let read = BTreeSet::new();
        let ctx = in_w(&read);
        for (cmd, class, rule, finding) in rows {
            let c = classify(&bash(cmd), &policy, &ctx);
            assert_eq!((c.class, c.rule.as_str()), (*class, *rule), "{cmd}");
            assert_eq!(
                c.findings.first().map(|f| f.halt_type.as_str()),
                *finding,
                "{cmd}"
            );
        }
    }

    #[test]
    fn policy_rules_extend_the_table() {
        let policy = GatePolicy {
            destructive: vec![r"\bmake\s+deploy\b".into()],
            read_only: vec![r"^cargo\s+test\b".into()],
            ..GatePolicy::default()
        };
        let read = BTreeSet::new();
        let ctx = in_w(&read);
        assert_eq!(
            classify(&bash("make deploy"), &policy, &ctx).class,
            ActionClass::Destructive
        );
        assert_eq!(
            classify(&bash("cargo test -q"), &policy, &ctx).class,
            ActionClass::ReadOnly
        );
    }

    fn file(tool: &str, path: &str, content: &str) -> ToolCall {
        ToolCall {
            agent: "claude".into(),
            phase: "pre".into(),
            tool: tool.into(),
            target: path.into(),
            content: content.into(),
            ..ToolCall::default()
        }
    }

    #[test]
    fn file_tool_table() {
        let read: BTreeSet<String> = ["/w/src/lib.rs".to_string()].into();
        // (call, target exists, class, rule, findings)
        let rows: Vec<(ToolCall, bool, ActionClass, &str, Vec<&str>)> = vec![
            (
                file("Read", "src/lib.rs", ""),
                true,
                ActionClass::ReadOnly,
                "read-tool",
                vec![],
            ),
            (
                file("Read", "/home/u/.ssh/id_rsa", ""),
                true,
                ActionClass::Destructive,
                "credential-read",
                vec![],
            ),
            (
                file("Read", ".env", ""),
                true,
                ActionClass::Destructive,
                "credential-read",
                vec![],
            ),
            (
                file("Edit", "/w/src/lib.rs", ""),
                true,
                ActionClass::ReversibleWrite,
                "write-in-workdir",
                vec![],
            ),
            (
                file("Edit", "/w/src/parser.rs", ""),
                true,
                ActionClass::ReversibleWrite,
                "write-in-workdir",
                vec!["modifying_unread_code"],
            ),
            (
                file("Write", "/w/src/new.rs", "fn main() {}"),
                false,
                ActionClass::ReversibleWrite,
                "write-in-workdir",
                vec![],
            ),
            (
                file("Write", "/w/src/old.rs", ""),
                true,
                ActionClass::ReversibleWrite,
                "write-in-workdir",
                vec!["modifying_unread_code"],
            ),
            (
                file("Write", "/etc/hosts", ""),
                false,
                ActionClass::Destructive,
                "write-outside-workdir",
                vec![],
            ),
            (
                file("Write", "../elsewhere/x", ""),
                false,
                ActionClass::Destructive,
                "write-outside-workdir",
                vec![],
            ),
            (
                file("Write", "/w/.claude/settings.json", "{}"),
                false,
                ActionClass::Destructive,
                "agent-hook-config",
                vec![],
            ),
            (
                file("Write", "/root/.claude/settings.json", "{}"),
                false,
                ActionClass::Destructive,
                "agent-hook-config",
                vec![],
            ),
            (
                file("Write", "/w/.loopexec/ledger.sqlite", ""),
                false,
                ActionClass::Destructive,
                "write-loopexec-or-git-state",
                vec![],
            ),
            (
                file(
                    "Write",
                    "/w/config/deploy.env",
                    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                ),
                false,
                ActionClass::ReversibleWrite,
                "write-in-workdir",
                vec!["secrets_exposure"],
            ),
            (
                file("mystery_tool", "x", ""),
                false,
                ActionClass::Destructive,
                "unknown-tool",
                vec![],
            ),
            (
                file("read_file", "src/lib.rs", ""),
                true,
                ActionClass::ReadOnly,
                "read-tool",
                vec![],
            ),
            // Claude Code's own tools that touch no file (a new user's review had them
            // declined as unknown)
            (
                file("BashOutput", "", ""),
                false,
                ActionClass::ReadOnly,
                "agent-tool",
                vec![],
            ),
            (
                file("Task", "", ""),
                false,
                ActionClass::ReadOnly,
                "agent-tool",
                vec![],
            ),
            // a write or shell call the gate cannot read is not allowed (the review's
            // payload without `tool_input` was allowed)
            (
                file("Write", "", "x"),
                false,
                ActionClass::Destructive,
                "unreadable-call",
                vec![],
            ),
            (
                file("Bash", " ", ""),
                false,
                ActionClass::Destructive,
                "unreadable-call",
                vec![],
            ),
        ];
        for (call, exists, class, rule, findings) in rows {
            let ctx = Context {
                workdir: Some(Path::new("/w")),
                read: &read,
                target_exists: exists,
                escapes_by_symlink: false,
                resolve: None,
            };
            let c = classify(&call, &GatePolicy::default(), &ctx);
            let got: Vec<&str> = c.findings.iter().map(|f| f.halt_type.as_str()).collect();
            assert_eq!(
                (c.class, c.rule.as_str(), got),
                (class, rule, findings),
                "{call:?}"
            );
        }
    }

    /// Claude Code's Bash keeps a `cd` between calls and says where it stands in the
    /// payload's `cwd`: `cd /etc` in one call, `rm -rf passwd` in the next (a review's
    /// allowed pair). A shell inside the tree is judged as before.
    #[test]
    fn a_shell_standing_outside_the_tree_writes_outside_it() {
        let read = BTreeSet::new();
        let ctx = in_w(&read);
        let at = |cwd: &str, cmd: &str| {
            let mut call = bash(cmd);
            call.cwd = Some(cwd.into());
            let c = classify(&call, &GatePolicy::default(), &ctx);
            (c.class, c.rule)
        };
        assert_eq!(
            at("/etc", "rm -rf passwd"),
            (ActionClass::Destructive, "write-after-leaving-tree".into())
        );
        assert_eq!(
            at("/etc", "ls -la"),
            (ActionClass::ReadOnly, "read-only-command".into())
        );
        assert_eq!(
            at("/w/src", "rm old.rs"),
            (ActionClass::ReversibleWrite, "shell-in-workdir".into())
        );
        assert_eq!(
            at("/w/src", "rm ../../etc/passwd"),
            (ActionClass::Destructive, "delete-outside-tree".into())
        );
    }

    /// Before: `Write link/x` where `link` is a symlink to `/etc` in the workdir was a
    /// reversible write inside the tree (the path was compared lexically).
    #[test]
    fn a_write_through_a_symlinked_directory_is_outside_the_tree() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("w");
        let out = d.path().join("outside");
        std::fs::create_dir_all(w.join("src")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(&out, w.join("link")).unwrap();
        // (target, escapes)
        let rows = [
            ("link/x", true),
            ("link/new/deeper/x", true),
            ("link", true),
            ("src/x", false),
            ("src/new/x", false),
            ("../outside/x", false), // outside lexically: write-outside-workdir already
        ];
        for (t, want) in rows {
            let target = normalize(t, Some(&w));
            assert_eq!(escapes_by_symlink(&target, &w), want, "{t}");
        }
        let read = BTreeSet::new();
        let ctx = Context {
            workdir: Some(&w),
            read: &read,
            target_exists: false,
            escapes_by_symlink: true,
            resolve: Some(escapes_by_symlink),
        };
        let c = classify(&file("Write", "link/x", ""), &GatePolicy::default(), &ctx);
        assert_eq!(
            (c.class, c.rule.as_str()),
            (ActionClass::Destructive, "write-through-symlink")
        );
        // a shell command through the same link (a review's `rm -rf e/`, `echo x >
        // e/passwd` after `ln -s /etc e`)
        for (cmd, class) in [
            ("rm -rf link/", ActionClass::Destructive),
            ("echo x > link/passwd", ActionClass::Destructive),
            ("truncate -s0 link/x", ActionClass::Destructive),
            ("rm -rf src/x", ActionClass::ReversibleWrite),
        ] {
            let c = classify(&bash(cmd), &GatePolicy::default(), &ctx);
            assert_eq!(c.class, class, "{cmd}: {c:?}");
        }
    }

    #[test]
    fn a_secret_is_critical() {
        let read = BTreeSet::new();
        let ctx = in_w(&read);
        let c = classify(
            &file(
                "Write",
                "/w/k",
                "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
            ),
            &GatePolicy::default(),
            &ctx,
        );
        assert!(c.critical(), "{c:?}");
    }
}
