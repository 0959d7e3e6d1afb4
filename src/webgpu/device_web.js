// device_web.js — the browser implementation of the GPU device layer
// (src/webgpu/device.h) over navigator.gpu, as an Emscripten JS library linked
// into the tinytrain_web_gpu module (cmake/wasm.cmake) behind the C shim
// src/web/device_web.c. Owns the JS tables of buffers, kernels (pipeline +
// bind group layout) and bind groups, the command encoder of the step being
// recorded, buffer mappings, and error reporting: validation / out-of-memory
// errors of object creation are caught with error scopes, shader compile
// errors through getCompilationInfo, anything else through
// onuncapturederror and device.lost; all are kept and returned by the next
// ttjs_gpu_check / submit / read_finish — never silent.
//
// The async parts of WebGPU map onto the synchronous C API like this:
//  - the adapter and device are requested by the Worker before any C call
//    (worker.js sets Module.ttGpuDevice / Module.ttGpuInfo); ttjs_gpu_open
//    only picks them up;
//  - ttjs_gpu_read_finish and ttjs_gpu_check return a Promise when the
//    mapping / error scopes are still pending, and a plain value when not.
//    worker.js instantiates the module with these two imports wrapped in
//    WebAssembly.Suspending and the C entry points that reach them wrapped
//    in WebAssembly.promising (JSPI), so a Promise suspends the wasm stack
//    until it settles. The Worker's split-phase step awaits the GPU
//    (Module.ttGpuIdle) between submit and collect, so the hot path does not
//    suspend.
// Status codes are tt.h's: 1 EINVAL, 3 ENOMEM, 5 EUNSUP, 6 EDEVICE.

var TTGpuLibrary = {
  $TTGPU: {
    dev: null,
    bufs: [],
    kerns: [],
    groups: [],
    enc: null,
    pass: null,
    passKernel: -1,
    msg: '',
    errCode: 0,
    err: '',
    scopes: [],
    fail: function (code, msg) {
      TTGPU.msg = msg;
      return code;
    },
    record: function (code, msg) {
      // keep the first asynchronous error: it is the cause, the rest follow from it
      if (!TTGPU.errCode) {
        TTGPU.errCode = code;
        TTGPU.err = msg;
      }
    },
    scoped: function (what, fn) {
      var dev = TTGPU.dev;
      dev.pushErrorScope('out-of-memory');
      dev.pushErrorScope('validation');
      var r = fn();
      var p1 = dev.popErrorScope(), p2 = dev.popErrorScope();
      var p = Promise.all([p1, p2]).then(function (errs) {
        for (var i = 0; i < 2; i++) {
          if (errs[i]) TTGPU.record(i === 1 ? 3 : 6, what + ': ' + String(errs[i].message).split('\n')[0]);
        }
      }, function (e) { TTGPU.record(6, what + ': ' + e.message); });
      TTGPU.track(p);
      return r;
    },
    track: function (p) {
      // pending promises that ttjs_gpu_check waits for
      var q = p.then(null, function (e) { TTGPU.record(6, 'webgpu: ' + (e && e.message)); });
      TTGPU.scopes.push(q);
      q.then(function () {
        var k = TTGPU.scopes.indexOf(q);
        if (k >= 0) TTGPU.scopes.splice(k, 1);
      });
    },
    endPass: function () {
      if (TTGPU.pass) {
        TTGPU.pass.end();
        TTGPU.pass = null;
        TTGPU.passKernel = -1;
      }
    },
    report: function () {
      if (TTGPU.errCode) return TTGPU.fail(TTGPU.errCode, TTGPU.err);
      return 0;
    },
    // Not called from C: the Worker awaits this (Module.ttGpuIdle) between
    // submit and collect, so collect finds its mapping done.
    idle: function () {
      var ps = TTGPU.scopes.slice();
      for (var i = 0; i < TTGPU.bufs.length; i++) {
        var b = TTGPU.bufs[i];
        if (b && b.map && !b.map.done && !b.map.failed) ps.push(b.map.promise);
      }
      return Promise.all(ps);
    },
  },
  $TTGPU__postset: 'Module["ttGpuIdle"] = function () { return TTGPU.idle(); };',

  ttjs_gpu_open__deps: ['$TTGPU'],
  ttjs_gpu_open: function (wantTs, vals, nVals, name, nameCap) {
    var dev = Module['ttGpuDevice'];
    if (!dev) return TTGPU.fail(5, Module['ttGpuError'] || 'webgpu: no WebGPU adapter in this browser');
    if (TTGPU.dev && TTGPU.dev !== dev) TTGPU.bufs = [];
    TTGPU.dev = dev;
    TTGPU.kerns = [];
    TTGPU.groups = [];
    TTGPU.enc = null;
    TTGPU.pass = null;
    TTGPU.errCode = 0;
    TTGPU.err = '';
    TTGPU.scopes = [];
    if (!dev.__ttHooked) {
      dev.__ttHooked = true;
      dev.addEventListener('uncapturederror', function (e) {
        TTGPU.record(e.error && e.error.constructor && e.error.constructor.name === 'GPUOutOfMemoryError' ? 3 : 6,
          'webgpu: ' + String(e.error && e.error.message).split('\n')[0]);
      });
      dev.lost.then(function (info) {
        TTGPU.record(6, 'webgpu: device lost: ' + (info.message || info.reason || 'unknown reason'));
      });
    }
    var info = Module['ttGpuInfo'] || {};
    var l = dev.limits;
    var v = [l.maxStorageBufferBindingSize, l.maxBufferSize, l.maxUniformBufferBindingSize, l.maxStorageBuffersPerShaderStage,
      l.maxComputeWorkgroupStorageSize, l.maxComputeInvocationsPerWorkgroup, l.maxComputeWorkgroupsPerDimension,
      l.minUniformBufferOffsetAlignment, l.minStorageBufferOffsetAlignment,
      wantTs && dev.features.has('timestamp-query') ? 1 : 0, dev.features.has('shader-f16') ? 1 : 0,
      dev.features.has('subgroups') ? 1 : 0, info.subgroupMin || 0, info.subgroupMax || 0, info.isCpu ? 1 : 0,
      dev.features.has('chromium-experimental-subgroup-matrix') ? 1 : 0,
      info.sgmat ? info.sgmat.M : 0, info.sgmat ? info.sgmat.N : 0, info.sgmat ? info.sgmat.K : 0];
    for (var i = 0; i < nVals && i < v.length; i++) HEAPF64[(vals >> 3) + i] = v[i] || 0;
    stringToUTF8(String(info.name || 'WebGPU adapter').slice(0, 120), name, nameCap);
    return 0;
  },

  ttjs_gpu_close__deps: ['$TTGPU'],
  ttjs_gpu_close: function () {
    TTGPU.endPass();
    TTGPU.enc = null;
    for (var i = 0; i < TTGPU.bufs.length; i++) {
      var b = TTGPU.bufs[i];
      if (b && b.buf) b.buf.destroy();
    }
    TTGPU.bufs = [];
    TTGPU.kerns = [];
    TTGPU.groups = [];
  },

  ttjs_gpu_message__deps: ['$TTGPU'],
  ttjs_gpu_message: function (buf, cap) {
    stringToUTF8(TTGPU.msg || 'webgpu: error', buf, cap);
  },

  ttjs_gpu_buffer__deps: ['$TTGPU'],
  ttjs_gpu_buffer: function (bytes, usage, label) {
    var dev = TTGPU.dev;
    var lab = UTF8ToString(label);
    // whole multiples of 16 bytes, as the native layer: whole-buffer bindings
    // may be declared array<vec4<f32>>
    var size = Math.max(16, Math.ceil(bytes / 16) * 16);
    if (size > dev.limits.maxBufferSize)
      return -TTGPU.fail(3, 'webgpu: buffer ' + lab + ' of ' + bytes + ' bytes exceeds maxBufferSize ' + dev.limits.maxBufferSize);
    var U = GPUBufferUsage, u;
    if (usage & 4) u = U.MAP_READ | U.COPY_DST;
    else if (usage & 2) u = U.UNIFORM | U.COPY_DST;
    else u = U.STORAGE | U.COPY_SRC | U.COPY_DST;
    var buf;
    try {
      buf = TTGPU.scoped('webgpu: buffer ' + lab, function () { return dev.createBuffer({ size: size, usage: u, label: lab }); });
    } catch (e) {
      return -TTGPU.fail(3, 'webgpu: buffer ' + lab + ': ' + e.message);
    }
    var h = TTGPU.bufs.indexOf(null);
    if (h < 0) h = TTGPU.bufs.length;
    TTGPU.bufs[h] = { buf: buf, size: size, usage: usage, map: null };
    return h;
  },

  ttjs_gpu_buffer_free__deps: ['$TTGPU'],
  ttjs_gpu_buffer_free: function (h) {
    var b = TTGPU.bufs[h];
    if (!b) return;
    b.buf.destroy();
    TTGPU.bufs[h] = null;
  },

  ttjs_gpu_write__deps: ['$TTGPU'],
  ttjs_gpu_write: function (h, offset, data, bytes) {
    var b = TTGPU.bufs[h];
    if (!b) return TTGPU.fail(1, 'webgpu: write to a bad buffer handle');
    if (offset + bytes > b.size) return TTGPU.fail(1, 'webgpu: write past the end of a buffer');
    if (bytes > 0) TTGPU.dev.queue.writeBuffer(b.buf, offset, HEAPU8, data, bytes);
    return 0;
  },

  ttjs_gpu_kernel__deps: ['$TTGPU'],
  ttjs_gpu_kernel: function (wgsl, entry, nBind, kinds, label) {
    var dev = TTGPU.dev;
    var code = UTF8ToString(wgsl), ep = UTF8ToString(entry), lab = UTF8ToString(label);
    var entries = [];
    for (var i = 0; i < nBind; i++) {
      var kind = HEAPU8[kinds + i];
      entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE,
        buffer: { type: kind === 0 ? 'uniform' : kind === 1 ? 'read-only-storage' : 'storage' } });
    }
    var k;
    try {
      k = TTGPU.scoped('webgpu: kernel ' + lab, function () {
        var mod = dev.createShaderModule({ code: code, label: lab });
        if (mod.getCompilationInfo) {
          TTGPU.track(mod.getCompilationInfo().then(function (ci) {
            for (var j = 0; j < ci.messages.length; j++) {
              var m = ci.messages[j];
              if (m.type === 'error') {
                TTGPU.record(6, 'webgpu: kernel ' + lab + ' (line ' + m.lineNum + '): ' + String(m.message).split('\n')[0]);
                break;
              }
            }
          }));
        }
        var bgl = dev.createBindGroupLayout({ entries: entries, label: lab });
        var pl = dev.createPipelineLayout({ bindGroupLayouts: [bgl], label: lab });
        var p = dev.createComputePipeline({ layout: pl, compute: { module: mod, entryPoint: ep }, label: lab });
        return { p: p, bgl: bgl };
      });
    } catch (e) {
      return -TTGPU.fail(6, 'webgpu: kernel ' + lab + ': ' + e.message);
    }
    TTGPU.kerns.push(k);
    return TTGPU.kerns.length - 1;
  },

  ttjs_gpu_group__deps: ['$TTGPU'],
  ttjs_gpu_group: function (kh, n, flat) {
    var k = TTGPU.kerns[kh];
    if (!k) return -TTGPU.fail(1, 'webgpu: bind group for a bad kernel handle');
    var entries = [];
    for (var i = 0; i < n; i++) {
      var bh = HEAPF64[(flat >> 3) + 3 * i], off = HEAPF64[(flat >> 3) + 3 * i + 1], size = HEAPF64[(flat >> 3) + 3 * i + 2];
      var b = TTGPU.bufs[bh];
      if (!b) return -TTGPU.fail(1, 'webgpu: bind group with a bad buffer handle');
      var res = { buffer: b.buf, offset: off };
      if (size > 0) res.size = size;
      entries.push({ binding: i, resource: res });
    }
    var g;
    try {
      g = TTGPU.scoped('webgpu: bind group', function () { return TTGPU.dev.createBindGroup({ layout: k.bgl, entries: entries }); });
    } catch (e) {
      return -TTGPU.fail(6, 'webgpu: bind group: ' + e.message);
    }
    TTGPU.groups.push(g);
    return TTGPU.groups.length - 1;
  },

  ttjs_gpu_begin__deps: ['$TTGPU'],
  ttjs_gpu_begin: function () {
    if (TTGPU.errCode) return TTGPU.report();
    TTGPU.endPass();
    TTGPU.enc = TTGPU.dev.createCommandEncoder();
    return 0;
  },

  ttjs_gpu_dispatch__deps: ['$TTGPU'],
  ttjs_gpu_dispatch: function (kh, gh, x, y, z) {
    if (!TTGPU.enc) return;
    if (!TTGPU.pass) TTGPU.pass = TTGPU.enc.beginComputePass();
    if (TTGPU.passKernel !== kh) {
      TTGPU.pass.setPipeline(TTGPU.kerns[kh].p);
      TTGPU.passKernel = kh;
    }
    TTGPU.pass.setBindGroup(0, TTGPU.groups[gh]);
    TTGPU.pass.dispatchWorkgroups(x, y, z);
  },

  ttjs_gpu_copy__deps: ['$TTGPU'],
  ttjs_gpu_copy: function (src, srcOff, dst, dstOff, bytes) {
    if (!TTGPU.enc) return;
    TTGPU.endPass();
    TTGPU.enc.copyBufferToBuffer(TTGPU.bufs[src].buf, srcOff, TTGPU.bufs[dst].buf, dstOff, bytes);
  },

  ttjs_gpu_clear__deps: ['$TTGPU'],
  ttjs_gpu_clear: function (h, off, bytes) {
    if (!TTGPU.enc) return;
    TTGPU.endPass();
    TTGPU.enc.clearBuffer(TTGPU.bufs[h].buf, off, bytes);
  },

  ttjs_gpu_submit__deps: ['$TTGPU'],
  ttjs_gpu_submit: function () {
    if (!TTGPU.enc) return TTGPU.fail(1, 'webgpu: submit without begin');
    TTGPU.endPass();
    var cb = TTGPU.enc.finish();
    TTGPU.enc = null;
    TTGPU.dev.queue.submit([cb]);
    return TTGPU.report();
  },

  ttjs_gpu_read_start__deps: ['$TTGPU'],
  ttjs_gpu_read_start: function (h, offset, bytes) {
    var b = TTGPU.bufs[h];
    if (!b || !(b.usage & 4)) return TTGPU.fail(1, 'webgpu: read_start needs a READBACK buffer');
    if (b.map) return TTGPU.fail(1, 'webgpu: readback buffer already mapping');
    if (offset + bytes > b.size) return TTGPU.fail(1, 'webgpu: bad readback range');
    var m = { off: offset, bytes: bytes, done: false, failed: null, promise: null };
    m.promise = b.buf.mapAsync(GPUMapMode.READ, offset, bytes).then(function () { m.done = true; },
      function (e) { m.failed = e && e.message ? e.message : String(e); });
    b.map = m;
    return 0;
  },

  ttjs_gpu_read_finish__deps: ['$TTGPU'],
  ttjs_gpu_read_finish: function (h, dst) {
    var b = TTGPU.bufs[h];
    if (!b || !b.map) return TTGPU.fail(1, 'webgpu: read_finish without read_start');
    var m = b.map;
    function finish() {
      b.map = null;
      if (m.failed) {
        if (TTGPU.errCode) return TTGPU.report();
        return TTGPU.fail(6, 'webgpu: readback failed: ' + m.failed);
      }
      var r = b.buf.getMappedRange(m.off, m.bytes);
      if (dst) HEAPU8.set(new Uint8Array(r), dst);
      b.buf.unmap();
      return TTGPU.report();
    }
    if (m.done || m.failed) return finish();
    return m.promise.then(finish);
  },

  ttjs_gpu_read_pending__deps: ['$TTGPU'],
  ttjs_gpu_read_pending: function (h) {
    var b = TTGPU.bufs[h];
    return b && b.map ? 1 : 0;
  },

  ttjs_gpu_check__deps: ['$TTGPU'],
  ttjs_gpu_check: function () {
    if (TTGPU.errCode || !TTGPU.scopes.length) return TTGPU.report();
    return Promise.all(TTGPU.scopes.slice()).then(function () { return TTGPU.report(); });
  },

};

mergeInto(LibraryManager.library, TTGpuLibrary);
