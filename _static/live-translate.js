// English -> German in the page, no server: the model exported by `python -m annotated_transformer
// export-onnx` (encoder.onnx, decoder.onnx, tokenizer.json, model.json) run by onnxruntime-web's
// WebAssembly backend. The steps are those of annotated_transformer.onnx_export.OnnxTranslator:
// sentencepiece BPE encoding, encode once, then greedy decoding that recomputes the prefix each step.
(function () {
  "use strict";

  // ---------------------------------------------------------------- sentencepiece BPE
  // Normalise (NFKC, whitespace runs to one space, trimmed), mark word starts with U+2581, split
  // into characters, then merge the adjacent pair whose merged piece scores highest (the leftmost
  // on ties) until no pair forms a piece; characters outside the vocabulary become unk.
  function Tokenizer(table) {
    this.table = table;
    this.ids = new Map();
    for (var i = 0; i < table.pieces.length; i++) {
      if (table.kinds[i] === 1 || table.kinds[i] === 4) this.ids.set(table.pieces[i], i);
    }
  }

  Tokenizer.prototype.normalize = function (text) {
    var t = this.table;
    var s = text.normalize("NFKC").replace(/[\u0000-\u0008\u000B\u000E-\u001F\u007F]/g, "")
      .replace(/[\s\u00A0\u2000-\u200A\u3000]/g, " ");
    if (t.remove_extra_whitespaces) s = s.replace(/ +/g, " ").trim();
    if (!s) return "";
    if (t.add_dummy_prefix) s = " " + s;
    return s.replace(/ /g, "\u2581");
  };

  Tokenizer.prototype.encode = function (text) {
    var symbols = Array.from(this.normalize(text));
    var scores = this.table.scores;
    while (symbols.length > 1) {
      var best = -1, bestScore = -Infinity;
      for (var i = 0; i + 1 < symbols.length; i++) {
        var id = this.ids.get(symbols[i] + symbols[i + 1]);
        if (id !== undefined && scores[id] > bestScore) { best = i; bestScore = scores[id]; }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
    }
    // sentencepiece joins a run of unknown characters into one unk piece.
    var unk = this.table.unk_id, out = [];
    for (var k = 0; k < symbols.length; k++) {
      var found = this.ids.get(symbols[k]);
      var piece = found === undefined ? unk : found;
      if (!(piece === unk && out.length && out[out.length - 1] === unk)) out.push(piece);
    }
    return out;
  };

  Tokenizer.prototype.piece = function (id) { return this.table.pieces[id]; };

  Tokenizer.prototype.decode = function (ids) {
    var t = this.table, out = "";
    for (var i = 0; i < ids.length; i++) {
      var id = ids[i];
      if (id === t.eos_id) break;
      if (id === t.bos_id || id === t.pad_id) continue;
      out += id === t.unk_id ? " \u2047 " : t.pieces[id];
    }
    return out.replace(/\u2581/g, " ").trim();
  };

  // ---------------------------------------------------------------- the model
  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  function fetchJson(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    });
  }

  function Translator(ort, info, tokenizer, encoder, decoder) {
    this.ort = ort; this.info = info; this.tokenizer = tokenizer;
    this.encoder = encoder; this.decoder = decoder;
  }

  Translator.load = function (modelUrl, runtimeUrl) {
    var ready = window.ort ? Promise.resolve() : loadScript(runtimeUrl + "ort.wasm.min.js");
    return ready.then(function () {
      var ort = window.ort;
      ort.env.wasm.wasmPaths = new URL(runtimeUrl, document.baseURI).href;
      ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation, which a static host rarely sets
      return Promise.all([fetchJson(modelUrl + "model.json"), fetchJson(modelUrl + "tokenizer.json")])
        .then(function (parts) {
          var info = parts[0], table = parts[1];
          var options = { executionProviders: ["wasm"] };
          return Promise.all([
            ort.InferenceSession.create(modelUrl + info.files.encoder, options),
            ort.InferenceSession.create(modelUrl + info.files.decoder, options),
          ]).then(function (models) {
            return new Translator(ort, info, new Tokenizer(table), models[0], models[1]);
          });
        });
    });
  };

  function int64(ids) {
    return BigInt64Array.from(ids.map(function (i) { return BigInt(i); }));
  }

  // Greedy decoding as decoding.greedy_decode: pad and bos banned, the argmax appended until eos,
  // at most source length + 50 new tokens (the paper's limit) and what the positions hold.
  Translator.prototype.translate = async function (sentence) {
    var ort = this.ort, info = this.info;
    var srcIds = this.tokenizer.encode(sentence).concat([info.eos_id]);
    if (srcIds.length > info.max_len) throw new Error("the sentence is longer than the model's positions");
    var src = new ort.Tensor("int64", int64(srcIds), [1, srcIds.length]);
    var encoded = await this.encoder.run({ src: src });
    var memory = encoded.memory;
    var limit = Math.max(1, Math.min(srcIds.length + 50, info.max_len - 1));
    var tokens = [info.bos_id], cross = null;
    for (var step = 0; step < limit; step++) {
      var prefix = new ort.Tensor("int64", int64(tokens), [1, tokens.length]);
      var out = await this.decoder.run({ src: src, memory: memory, prefix: prefix });
      var logits = out.logits.data, best = -1, bestValue = -Infinity;
      for (var v = 0; v < logits.length; v++) {
        if (info.banned.indexOf(v) >= 0) continue;
        if (logits[v] > bestValue) { bestValue = logits[v]; best = v; }
      }
      tokens.push(best);
      cross = out.attention;
      if (best === info.eos_id) break;
    }
    return { sourceIds: srcIds, ids: tokens, text: this.tokenizer.decode(tokens), cross: cross };
  };

  // ---------------------------------------------------------------- the attention picture
  // cross: (layers, heads, T, S) for the decoder inputs of the last step, i.e. bos and every
  // output token but the last; row t is the attention while choosing output token t + 1.
  function attentionSpec(result, tokenizer) {
    var dims = result.cross.dims, data = result.cross.data;
    var L = dims[0], H = dims[1], T = dims[2], S = dims[3];
    var src = result.sourceIds.map(function (i) { return tokenizer.piece(i).replace(/\u2581/g, ""); });
    var out = result.ids.slice(1, 1 + T).map(function (i) { return tokenizer.piece(i).replace(/\u2581/g, ""); });
    var rows = [];
    for (var l = 0; l < L; l++) for (var h = 0; h < H; h++) for (var t = 0; t < T; t++) for (var s = 0; s < S; s++) {
      rows.push({ l: l + 1, h: h + 1, t: t, s: s, w: data[((l * H + h) * T + t) * S + s] });
    }
    var heads = [0]; for (var i = 1; i <= H; i++) heads.push(i);
    var layers = []; for (var j = 1; j <= L; j++) layers.push(j);
    return {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      title: "Encoder-decoder attention while writing each German token",
      params: [
        { name: "layer", value: L, bind: { input: "select", options: layers, name: "layer " } },
        { name: "head", value: 0, bind: { input: "select", options: heads,
          labels: ["mean of heads"].concat(heads.slice(1).map(String)), name: "head " } },
      ],
      data: { values: rows },
      transform: [
        { filter: "datum.l == layer && (head == 0 || datum.h == head)" },
        { aggregate: [{ op: "mean", field: "w", as: "weight" }], groupby: ["t", "s"] },
      ],
      mark: "rect",
      encoding: {
        x: { field: "s", type: "ordinal", title: "English piece",
             axis: { labelExpr: JSON.stringify(src) + "[datum.value]", labelAngle: -45 } },
        y: { field: "t", type: "ordinal", title: "German piece",
             axis: { labelExpr: JSON.stringify(out) + "[datum.value]" } },
        color: { field: "weight", type: "quantitative", scale: { domain: [0, 1], range: ["#ffffff", "#08306b"] } },
        tooltip: [{ field: "weight", type: "quantitative", format: ".3f" }],
      },
      width: { step: 16 }, height: { step: 16 },
    };
  }

  // ---------------------------------------------------------------- the widget
  // Nothing is fetched until the reader asks for a translation: the model and the runtime (some
  // 27 MB) load on the first request, which the status line says while it waits. An empty input
  // is refused without loading anything; after an error the previous translation and its picture
  // are cleared, so what stays on screen is never a stale answer.
  function setUp(box) {
    var input = box.querySelector(".at-live-input"), button = box.querySelector(".at-live-go");
    var status = box.querySelector(".at-live-status"), output = box.querySelector(".at-live-output");
    var chart = box.querySelector(".at-live-chart");
    box.atTranslator = null;  // the loading promise, once the reader has asked
    box.setAttribute("data-state", "idle");
    status.textContent = "the model loads when you ask for your first translation";

    function clear() { output.textContent = ""; chart.textContent = ""; box.removeAttribute("data-ms"); }

    function load() {
      if (!box.atTranslator) {
        box.atTranslator = Translator.load(box.getAttribute("data-model"), box.getAttribute("data-runtime"));
        box.atTranslator.catch(function () { box.atTranslator = null; });  // the next click tries again
      }
      return box.atTranslator;
    }

    var busy = false;
    async function go() {
      if (busy) return;
      var sentence = input.value.trim();
      if (!sentence) {
        clear();
        status.textContent = "type an English sentence first";
        box.setAttribute("data-state", "empty");
        return;
      }
      busy = true; button.disabled = true;
      try {
        var translator;
        if (!box.atTranslator) {
          box.setAttribute("data-state", "loading");
          status.textContent = "loading the model (once, for the first translation)...";
        }
        try {
          translator = await load();
        } catch (err) {
          clear();
          status.textContent = "the model could not be loaded: " + err +
            " (the page must be served over http(s), with the files of `export-onnx` in the site's live/model/)";
          box.setAttribute("data-state", "error");
          return;
        }
        box.setAttribute("data-state", "translating");
        status.textContent = "translating...";
        var start = performance.now();
        try {
          var result = await translator.translate(sentence);
          var ms = performance.now() - start;
          output.textContent = result.text;
          status.textContent = "translated in " + ms.toFixed(0) + " ms (" + (result.ids.length - 1) +
            " tokens, greedy decoding, in this page)";
          box.setAttribute("data-ms", ms.toFixed(1));
          chart.textContent = "";
          if (window.vegaEmbed && result.cross) {
            await window.vegaEmbed(chart, attentionSpec(result, translator.tokenizer),
                                   { renderer: "svg", actions: false });
          }
          box.setAttribute("data-state", "done");
        } catch (err) {
          clear();
          status.textContent = "translation failed: " + err;
          box.setAttribute("data-state", "error");
        }
      } finally {
        busy = false; button.disabled = false;
      }
    }
    button.addEventListener("click", go);
    input.addEventListener("keydown", function (e) { if (e.key === "Enter") go(); });
    box.atSetUp = true;
  }

  window.atLive = { Tokenizer: Tokenizer, Translator: Translator };
  function start() {
    var boxes = document.querySelectorAll("div.at-live");
    for (var i = 0; i < boxes.length; i++) if (!boxes[i].atSetUp) setUp(boxes[i]);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
