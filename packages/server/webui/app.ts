// The chat page `minfer serve` answers at `/`: conversations kept in this browser (localStorage),
// streamed over /v1/chat/completions, stop, regenerate, edit, markdown, reasoning folded. Bundled
// with its two dependencies (marked, DOMPurify) into one HTML file at build time.
import DOMPurify from "dompurify";
import { marked } from "marked";

interface Message {
  role: "user" | "assistant";
  content: string;
  reasoning?: string;
  stopped?: boolean;
  stats?: string;
}
interface Conversation {
  id: string;
  title: string;
  messages: Message[];
  updated: number;
}
interface Settings {
  system: string;
  temperature: number;
  top_p: number;
  top_k: number;
  max_tokens: number;
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const store = {
  get<T>(key: string, dflt: T): T {
    try {
      const v = localStorage.getItem(`minfer.${key}`);
      return v === null ? dflt : (JSON.parse(v) as T);
    } catch {
      return dflt;
    }
  },
  set(key: string, v: unknown) {
    localStorage.setItem(`minfer.${key}`, JSON.stringify(v));
  },
};

let conversations: Conversation[] = store.get("conversations", []);
let currentId: string | undefined = store.get<string | undefined>("current", undefined);
let settings: Settings = {
  system: "",
  temperature: 0.8,
  top_p: 0.95,
  top_k: 40,
  max_tokens: 1024,
  ...store.get<Partial<Settings>>("settings", {}),
};
let apiKey: string | undefined = store.get<string | undefined>("apiKey", undefined);
let running: AbortController | undefined;

const current = () => conversations.find((c) => c.id === currentId);
const save = () => {
  store.set("conversations", conversations);
  store.set("current", currentId);
};

function showError(text: string | undefined) {
  const e = $("error");
  e.hidden = text === undefined;
  e.textContent = text ?? "";
}

/** Asks for the API key (the dialog); resolves once one is given. */
function askKey(): Promise<void> {
  const dialog = $<HTMLDialogElement>("key-dialog");
  return new Promise((resolve) => {
    const form = $<HTMLFormElement>("key-form");
    form.onsubmit = () => {
      apiKey = $<HTMLInputElement>("key-input").value.trim() || undefined;
      store.set("apiKey", apiKey);
      resolve();
    };
    if (!dialog.open) dialog.showModal();
  });
}

/** fetch with the key; a 401 asks for the key and tries again. */
async function api(path: string, init: RequestInit = {}): Promise<Response> {
  for (;;) {
    const headers = new Headers(init.headers);
    if (apiKey) headers.set("authorization", `Bearer ${apiKey}`);
    const r = await fetch(path, { ...init, headers });
    if (r.status !== 401) return r;
    await askKey();
  }
}

async function errorText(r: Response): Promise<string> {
  try {
    const b = (await r.json()) as { error?: { message?: string } };
    return b.error?.message ?? `HTTP ${r.status}`;
  } catch {
    return `HTTP ${r.status}`;
  }
}

function markdown(text: string): string {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }) as string);
}

function renderList() {
  const ul = $("conversations");
  ul.replaceChildren();
  for (const c of [...conversations].sort((a, b) => b.updated - a.updated)) {
    const li = document.createElement("li");
    if (c.id === currentId) li.className = "current";
    const open = document.createElement("button");
    open.className = "open";
    open.type = "button";
    open.textContent = c.title || "New chat";
    open.onclick = () => {
      if (running) return;
      currentId = c.id;
      save();
      render();
    };
    const del = document.createElement("button");
    del.type = "button";
    del.textContent = "×";
    del.title = "Delete";
    del.onclick = () => {
      if (running && c.id === currentId) return;
      conversations = conversations.filter((x) => x.id !== c.id);
      if (currentId === c.id) currentId = undefined;
      save();
      render();
    };
    li.append(open, del);
    ul.append(li);
  }
}

function messageNode(m: Message, index: number, last: boolean): HTMLElement {
  const div = document.createElement("div");
  div.className = `message ${m.role}`;
  div.dataset.index = String(index);
  const role = document.createElement("div");
  role.className = "role";
  role.append(m.role === "user" ? "You" : "Assistant");
  if (!running && m.role === "user") {
    const edit = document.createElement("button");
    edit.type = "button";
    edit.className = "edit";
    edit.textContent = "Edit";
    edit.onclick = () => startEdit(div, index);
    role.append(edit);
  }
  if (!running && m.role === "assistant" && last) {
    const again = document.createElement("button");
    again.type = "button";
    again.className = "regenerate";
    again.textContent = "Regenerate";
    again.onclick = () => void regenerate();
    role.append(again);
  }
  div.append(role);
  if (m.reasoning) {
    const details = document.createElement("details");
    details.className = "reasoning";
    const summary = document.createElement("summary");
    summary.textContent = "Reasoning";
    const body = document.createElement("div");
    body.innerHTML = markdown(m.reasoning);
    details.append(summary, body);
    div.append(details);
  }
  const content = document.createElement("div");
  content.className = "content";
  if (m.role === "user") content.textContent = m.content;
  else content.innerHTML = markdown(m.content);
  div.append(content);
  if (m.stats || m.stopped) {
    const stats = document.createElement("div");
    stats.className = "stats";
    stats.textContent = [m.stopped ? "stopped" : "", m.stats ?? ""].filter(Boolean).join(" · ");
    div.append(stats);
  }
  return div;
}

function renderMessages() {
  const box = $("messages");
  const c = current();
  box.replaceChildren(...(c?.messages ?? []).map((m, i, all) => messageNode(m, i, i === all.length - 1)));
  box.scrollTop = box.scrollHeight;
}

function render() {
  renderList();
  renderMessages();
  $("send").hidden = Boolean(running);
  $("stop").hidden = !running;
}

function startEdit(div: HTMLElement, index: number) {
  const c = current();
  if (!c || running) return;
  const area = document.createElement("textarea");
  area.className = "edit";
  area.value = c.messages[index]!.content;
  area.rows = 3;
  const saveBtn = document.createElement("button");
  saveBtn.type = "button";
  saveBtn.className = "save-edit";
  saveBtn.textContent = "Save and send";
  saveBtn.onclick = () => {
    c.messages = c.messages.slice(0, index);
    void send(area.value);
  };
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "Cancel";
  cancel.onclick = () => renderMessages();
  div.querySelector(".content")!.replaceWith(area);
  div.append(saveBtn, cancel);
  area.focus();
}

function model(): string {
  return $<HTMLSelectElement>("model").value;
}

/** Streams the assistant's answer to the conversation so far into a new message. */
async function answer(c: Conversation) {
  const reply: Message = { role: "assistant", content: "" };
  c.messages.push(reply);
  running = new AbortController();
  showError(undefined);
  render();
  const node = () => $("messages").lastElementChild as HTMLElement;
  let scheduled = false;
  const redraw = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      const old = node();
      if (old) old.replaceWith(messageNode(reply, c.messages.length - 1, true));
      $("messages").scrollTop = $("messages").scrollHeight;
    });
  };
  const messages = [
    ...(settings.system ? [{ role: "system", content: settings.system }] : []),
    ...c.messages.slice(0, -1).map((m) => ({ role: m.role, content: m.content })),
  ];
  const t0 = performance.now();
  try {
    const r = await api("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      signal: running.signal,
      body: JSON.stringify({
        model: model() || undefined,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        temperature: settings.temperature,
        top_p: settings.top_p,
        top_k: settings.top_k,
        max_tokens: settings.max_tokens,
      }),
    });
    if (!r.ok || !r.body) throw new Error(await errorText(r));
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        const chunk = JSON.parse(data) as {
          choices?: { delta?: { content?: string | null; reasoning_content?: string | null } }[];
          usage?: { completion_tokens: number };
          error?: { message: string };
        };
        if (chunk.error) throw new Error(chunk.error.message);
        const d = chunk.choices?.[0]?.delta;
        if (d?.content) reply.content += d.content;
        if (d?.reasoning_content) reply.reasoning = (reply.reasoning ?? "") + d.reasoning_content;
        if (chunk.usage) {
          const s = (performance.now() - t0) / 1000;
          reply.stats = `${chunk.usage.completion_tokens} tokens, ${(chunk.usage.completion_tokens / s).toFixed(1)} tok/s`;
        }
        redraw();
      }
    }
  } catch (e) {
    if ((e as Error).name === "AbortError") reply.stopped = true;
    else showError((e as Error).message);
  } finally {
    running = undefined;
    c.updated = Date.now();
    save();
    render();
  }
}

async function send(text: string) {
  const content = text.trim();
  if (!content || running) return;
  let c = current();
  if (!c) {
    c = {
      id: `${Date.now()}-${Math.random().toString(36).slice(2)}`,
      title: "",
      messages: [],
      updated: Date.now(),
    };
    conversations.push(c);
    currentId = c.id;
  }
  if (!c.title) c.title = content.slice(0, 40);
  c.messages.push({ role: "user", content });
  save();
  await answer(c);
}

async function regenerate() {
  const c = current();
  if (!c || running || c.messages.at(-1)?.role !== "assistant") return;
  c.messages.pop();
  await answer(c);
}

async function loadModels() {
  const r = await api("/v1/models");
  if (!r.ok) return showError(await errorText(r));
  const list = (await r.json()) as { data: { id: string; status?: { value: string } }[] };
  const select = $<HTMLSelectElement>("model");
  const chosen = store.get<string | undefined>("model", undefined);
  select.replaceChildren(
    ...list.data.map((m) => {
      const o = document.createElement("option");
      o.value = m.id;
      o.textContent = m.status ? `${m.id} (${m.status.value})` : m.id;
      return o;
    }),
  );
  if (chosen && list.data.some((m) => m.id === chosen)) select.value = chosen;
  await loadInfo();
}

async function loadInfo() {
  const info = $("model-info");
  const r = await api(`/props${model() ? `?model=${encodeURIComponent(model())}` : ""}`).catch(
    () => undefined,
  );
  if (!r?.ok) {
    info.textContent = "";
    return;
  }
  const p = (await r.json()) as {
    default_generation_settings?: { n_ctx?: number };
    total_slots?: number;
    model_path?: string;
  };
  const parts = [
    p.default_generation_settings?.n_ctx ? `context ${p.default_generation_settings.n_ctx} tokens` : "",
    p.total_slots ? `${p.total_slots} slot${p.total_slots > 1 ? "s" : ""}` : "",
  ].filter(Boolean);
  info.textContent = parts.join(" · ");
}

function bindSettings() {
  for (const key of ["temperature", "top_p", "top_k", "max_tokens"] as const) {
    const el = $<HTMLInputElement>(key);
    el.value = String(settings[key]);
    el.onchange = () => {
      const v = Number(el.value);
      if (Number.isFinite(v)) settings = { ...settings, [key]: v };
      store.set("settings", settings);
    };
  }
  const sys = $<HTMLTextAreaElement>("system");
  sys.value = settings.system;
  sys.onchange = () => {
    settings = { ...settings, system: sys.value };
    store.set("settings", settings);
  };
  const toggle = $("settings-toggle");
  toggle.onclick = () => {
    const s = $("settings");
    s.hidden = !s.hidden;
    toggle.setAttribute("aria-expanded", String(!s.hidden));
  };
}

function init() {
  bindSettings();
  const input = $<HTMLTextAreaElement>("input");
  $<HTMLFormElement>("composer").onsubmit = (e) => {
    e.preventDefault();
    const text = input.value;
    input.value = "";
    void send(text);
  };
  input.onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $<HTMLFormElement>("composer").requestSubmit();
    }
  };
  $("stop").onclick = () => running?.abort();
  $("new-chat").onclick = () => {
    if (running) return;
    currentId = undefined;
    save();
    render();
    input.focus();
  };
  $<HTMLSelectElement>("model").onchange = () => {
    store.set("model", model());
    void loadInfo();
  };
  render();
  void loadModels();
}

init();
