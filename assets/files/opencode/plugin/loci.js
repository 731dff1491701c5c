// loci's OpenCode plugin, written by `loci integration install opencode`
// (remove it with `loci integration remove opencode`). It hands OpenCode's
// session events to `loci hook opencode <event>`: the JSON object the hook
// reads on stdin, the text it prints (loci's {"context": "..."}, plain
// text, or a hook output object with hookSpecificOutput.additionalContext)
// added to the session's context.
// A hook that fails or is slow is ignored: the session never breaks
// because loci is not running.

const LOCI = __LOCI_BINARY__;
const TIMEOUT_MS = 5000;

async function hook(event, payload) {
  try {
    const { spawn } = await import("node:child_process");
    return await new Promise((resolve) => {
      let out = "";
      let done = false;
      const finish = (text) => {
        if (!done) {
          done = true;
          resolve(text);
        }
      };
      const child = spawn(LOCI, ["hook", "opencode", event], { stdio: ["pipe", "pipe", "ignore"] });
      const timer = setTimeout(() => {
        child.kill();
        finish("");
      }, TIMEOUT_MS);
      child.stdout.on("data", (d) => {
        out += d;
      });
      child.on("error", () => {
        clearTimeout(timer);
        finish("");
      });
      child.on("close", () => {
        clearTimeout(timer);
        finish(out);
      });
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(payload));
    });
  } catch {
    return "";
  }
}

function contextOf(out) {
  const text = (out || "").trim();
  if (!text) return "";
  try {
    const v = JSON.parse(text);
    const c = v && (typeof v.context === "string" ? v.context : v.hookSpecificOutput && v.hookSpecificOutput.additionalContext);
    return typeof c === "string" ? c : "";
  } catch {
    return text;
  }
}

export const LociPlugin = async ({ directory }) => {
  const wake = new Map();
  let last = "";
  const payload = (sessionID, name, extra) =>
    Object.assign({ session_id: sessionID || "", cwd: directory, hook_event_name: name }, extra || {});
  return {
    event: async ({ event }) => {
      const id = event && event.properties && (event.properties.sessionID || (event.properties.info && event.properties.info.id));
      if (event.type === "session.created") {
        last = contextOf(await hook("session-start", payload(id, "SessionStart", { source: "startup" })));
        wake.set(id || "", last);
      } else if (event.type === "session.deleted") {
        await hook("session-end", payload(id, "SessionEnd", { reason: "deleted" }));
        wake.delete(id || "");
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      // Without a session (a title or summary call) the latest wake-up.
      const sid = input && input.sessionID;
      const text = sid ? wake.get(sid) || "" : last;
      if (text && output && Array.isArray(output.system)) output.system.push(text);
    },
    "experimental.session.compacting": async (input, output) => {
      const text = contextOf(await hook("pre-compact", payload(input && input.sessionID, "PreCompact", { trigger: "auto" })));
      if (text && output && Array.isArray(output.context)) output.context.push(text);
    },
  };
};
