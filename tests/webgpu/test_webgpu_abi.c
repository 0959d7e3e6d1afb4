/* test_webgpu_abi.c — our webgpu.h subset (src/webgpu/webgpu_min.h) against the
 * library we load:
 *   1. struct sizes / field offsets (LP64), written out from the field lists
 *      of webgpu.h as shipped with this Dawn build (and the npm package's
 *      src/structs_def.ts): a change of webgpu_min.h must be deliberate;
 *   2. enum values of the old numbering this Dawn build uses;
 *   3. with the library: every function we dlsym is exported; the library
 *      writes exactly sizeof(WGPULimits) / sizeof(WGPUAdapterInfo) bytes and
 *      the values land in plausible fields; feature numbers agree with
 *      HasFeature; a bind group layout's buffer type is read from our offset
 *      (a layout declaring read-only storage for a read_write shader binding
 *      must be rejected, the matching one accepted).
 * Part 3 skips without a library/adapter unless TT_REQUIRE_WEBGPU=1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/device.h"
#include "tt_test.h"
#include "webgpu/webgpu_min.h"

#define SZ(T, n) CHECK_MSG(sizeof(T) == (n), "sizeof(%s) = %zu, expected %d", #T, sizeof(T), (int)(n))
#define OFF(T, f, n) \
    CHECK_MSG(offsetof(T, f) == (n), "offsetof(%s, %s) = %zu, expected %d", #T, #f, offsetof(T, f), (int)(n))

TT_TEST(test_struct_layouts) {
    SZ(WGPUStringView, 16);
    SZ(WGPUChainedStruct, 16);
    SZ(WGPUFuture, 8);
    SZ(WGPUFutureWaitInfo, 16);
    SZ(WGPUInstanceCapabilities, 24);
    OFF(WGPUInstanceCapabilities, timedWaitAnyMaxCount, 16);
    SZ(WGPUInstanceDescriptor, 32);
    SZ(WGPUDawnTogglesDescriptor, 48);
    OFF(WGPUDawnTogglesDescriptor, enabledToggleCount, 16);
    OFF(WGPUDawnTogglesDescriptor, disabledToggles, 40);
    SZ(WGPURequestAdapterOptions, 32);
    OFF(WGPURequestAdapterOptions, featureLevel, 8);
    OFF(WGPURequestAdapterOptions, powerPreference, 12);
    OFF(WGPURequestAdapterOptions, forceFallbackAdapter, 16);
    OFF(WGPURequestAdapterOptions, backendType, 20);
    OFF(WGPURequestAdapterOptions, compatibleSurface, 24);
    SZ(WGPURequestAdapterCallbackInfo, 40);
    OFF(WGPURequestAdapterCallbackInfo, mode, 8);
    OFF(WGPURequestAdapterCallbackInfo, callback, 16);
    OFF(WGPURequestAdapterCallbackInfo, userdata2, 32);
    SZ(WGPURequestDeviceCallbackInfo, 40);
    SZ(WGPUDeviceLostCallbackInfo, 40);
    SZ(WGPUBufferMapCallbackInfo, 40);
    SZ(WGPUPopErrorScopeCallbackInfo, 40);
    SZ(WGPUUncapturedErrorCallbackInfo, 32);
    OFF(WGPUUncapturedErrorCallbackInfo, callback, 8);
    /* WGPULimits of this build: 152 bytes, maxImmediateSize last */
    SZ(WGPULimits, 152);
    OFF(WGPULimits, maxTextureDimension1D, 8);
    OFF(WGPULimits, maxBindGroups, 24);
    OFF(WGPULimits, maxStorageBuffersPerShaderStage, 52);
    OFF(WGPULimits, maxUniformBufferBindingSize, 64);
    OFF(WGPULimits, maxStorageBufferBindingSize, 72);
    OFF(WGPULimits, minUniformBufferOffsetAlignment, 80);
    OFF(WGPULimits, minStorageBufferOffsetAlignment, 84);
    OFF(WGPULimits, maxVertexBuffers, 88);
    OFF(WGPULimits, maxBufferSize, 96);
    OFF(WGPULimits, maxComputeWorkgroupStorageSize, 124);
    OFF(WGPULimits, maxComputeInvocationsPerWorkgroup, 128);
    OFF(WGPULimits, maxComputeWorkgroupSizeX, 132);
    OFF(WGPULimits, maxComputeWorkgroupsPerDimension, 144);
    OFF(WGPULimits, maxImmediateSize, 148);
    SZ(WGPUSupportedFeatures, 16);
    SZ(WGPUAdapterInfo, 96);
    OFF(WGPUAdapterInfo, vendor, 8);
    OFF(WGPUAdapterInfo, device, 40);
    OFF(WGPUAdapterInfo, description, 56);
    OFF(WGPUAdapterInfo, backendType, 72);
    OFF(WGPUAdapterInfo, adapterType, 76);
    OFF(WGPUAdapterInfo, subgroupMinSize, 88);
    OFF(WGPUAdapterInfo, subgroupMaxSize, 92);
    SZ(WGPUQueueDescriptor, 24);
    SZ(WGPUDeviceDescriptor, 144);
    OFF(WGPUDeviceDescriptor, requiredFeatureCount, 24);
    OFF(WGPUDeviceDescriptor, requiredFeatures, 32);
    OFF(WGPUDeviceDescriptor, requiredLimits, 40);
    OFF(WGPUDeviceDescriptor, defaultQueue, 48);
    OFF(WGPUDeviceDescriptor, deviceLostCallbackInfo, 72);
    OFF(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo, 112);
    SZ(WGPUBufferDescriptor, 48);
    OFF(WGPUBufferDescriptor, usage, 24);
    OFF(WGPUBufferDescriptor, size, 32);
    OFF(WGPUBufferDescriptor, mappedAtCreation, 40);
    SZ(WGPUShaderModuleDescriptor, 24);
    SZ(WGPUShaderSourceWGSL, 32);
    OFF(WGPUShaderSourceWGSL, code, 16);
    SZ(WGPUBufferBindingLayout, 24);
    SZ(WGPUSamplerBindingLayout, 16);
    SZ(WGPUTextureBindingLayout, 24);
    SZ(WGPUStorageTextureBindingLayout, 24);
    /* with bindingArraySize after visibility (probed at run time below) */
    SZ(WGPUBindGroupLayoutEntry, 120);
    OFF(WGPUBindGroupLayoutEntry, binding, 8);
    OFF(WGPUBindGroupLayoutEntry, visibility, 16);
    OFF(WGPUBindGroupLayoutEntry, bindingArraySize, 24);
    OFF(WGPUBindGroupLayoutEntry, buffer, 32);
    OFF(WGPUBindGroupLayoutEntry, sampler, 56);
    OFF(WGPUBindGroupLayoutEntry, texture, 72);
    OFF(WGPUBindGroupLayoutEntry, storageTexture, 96);
    SZ(WGPUBindGroupLayoutDescriptor, 40);
    SZ(WGPUBindGroupEntry, 56);
    OFF(WGPUBindGroupEntry, buffer, 16);
    OFF(WGPUBindGroupEntry, offset, 24);
    OFF(WGPUBindGroupEntry, size, 32);
    SZ(WGPUBindGroupDescriptor, 48);
    OFF(WGPUBindGroupDescriptor, layout, 24);
    OFF(WGPUBindGroupDescriptor, entryCount, 32);
    SZ(WGPUPipelineLayoutDescriptor, 48);
    OFF(WGPUPipelineLayoutDescriptor, bindGroupLayoutCount, 24);
    OFF(WGPUPipelineLayoutDescriptor, immediateSize, 40);
    SZ(WGPUComputeState, 48);
    OFF(WGPUComputeState, entryPoint, 16);
    SZ(WGPUComputePipelineDescriptor, 80);
    OFF(WGPUComputePipelineDescriptor, layout, 24);
    OFF(WGPUComputePipelineDescriptor, compute, 32);
    SZ(WGPUCommandEncoderDescriptor, 24);
    SZ(WGPUPassTimestampWrites, 24);
    SZ(WGPUComputePassDescriptor, 32);
    SZ(WGPUQuerySetDescriptor, 32);
    OFF(WGPUQuerySetDescriptor, type, 24);
}

TT_TEST(test_enum_values) {
    /* values of this Dawn build (structs_def.ts), not of the newest webgpu.h */
    CHECK(WGPUFeatureName_TimestampQuery == 0x3);
    CHECK(WGPUFeatureName_ShaderF16 == 0xA);
    CHECK(WGPUFeatureName_Subgroups == 0x11);
    CHECK(WGPUFeatureName_CoreFeaturesAndLimits == 0x12);
    CHECK(WGPUFeatureName_ChromiumExperimentalSubgroupMatrix == 0x50038);
    CHECK(WGPUSType_ShaderSourceWGSL == 0x2);
    CHECK(WGPUSType_DawnTogglesDescriptor == 0x5000A);
    CHECK(WGPUCallbackMode_WaitAnyOnly == 1 && WGPUCallbackMode_AllowProcessEvents == 2);
    CHECK(WGPUBufferBindingType_BindingNotUsed == 0 && WGPUBufferBindingType_Uniform == 2);
    CHECK(WGPUBufferBindingType_Storage == 3 && WGPUBufferBindingType_ReadOnlyStorage == 4);
    CHECK(WGPUErrorType_NoError == 1 && WGPUErrorType_Validation == 2 && WGPUErrorType_OutOfMemory == 3);
    CHECK(WGPUErrorFilter_Validation == 1 && WGPUErrorFilter_OutOfMemory == 2);
    CHECK(WGPUBackendType_Vulkan == 6 && WGPUBackendType_Metal == 5);
    CHECK(WGPUFeatureLevel_Core == 2 && WGPUPowerPreference_HighPerformance == 2);
    CHECK(WGPUQueryType_Timestamp == 2);
    CHECK(WGPUDeviceLostReason_Destroyed == 2);
    CHECK(WGPUBufferUsage_MapRead == 1 && WGPUBufferUsage_CopySrc == 4 && WGPUBufferUsage_CopyDst == 8);
    CHECK(WGPUBufferUsage_Uniform == 0x40 && WGPUBufferUsage_Storage == 0x80 && WGPUBufferUsage_QueryResolve == 0x200);
    CHECK(WGPUShaderStage_Compute == 4 && WGPUMapMode_Read == 1);
}

/* ---- part 3: against the library ---- */
static char LIB[300];

static struct {
#define X(ret, name, args) ret(*name) args;
    TT_WGPU_FUNCS(X)
#undef X
} F;

static WGPUAdapter g_adapter;
static int g_done;
static void on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
    (void)m, (void)u1, (void)u2;
    if (s == WGPURequestAdapterStatus_Success) g_adapter = a;
    g_done = 1;
}

TT_TEST(test_exports) {
    void *h = dlopen(LIB, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (!h) return;
    int missing = 0;
#define X(ret, name, args)                                       \
    F.name = (ret(*) args)dlsym(h, #name);                       \
    if (!F.name) {                                               \
        fprintf(stderr, "  %s does not export %s\n", LIB, #name); \
        missing++;                                               \
    }
    TT_WGPU_FUNCS(X)
#undef X
    CHECK(missing == 0);
}

TT_TEST(test_library_layouts) {
    if (!F.wgpuCreateInstance) return;
    WGPUInstance inst = F.wgpuCreateInstance(NULL);
    CHECK(inst != NULL);
    if (!inst) return;
    WGPURequestAdapterOptions o;
    memset(&o, 0, sizeof o);
    WGPURequestAdapterCallbackInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.mode = WGPUCallbackMode_AllowProcessEvents;
    ci.callback = on_adapter;
    for (int fb = 0; fb < 2 && !g_adapter; fb++) {
        o.forceFallbackAdapter = (WGPUBool)fb;
        g_done = 0;
        F.wgpuInstanceRequestAdapter(inst, &o, ci);
        for (int i = 0; i < 100000 && !g_done; i++) F.wgpuInstanceProcessEvents(inst);
    }
    CHECK(g_adapter != NULL);
    if (!g_adapter) return;
    /* limits: exactly sizeof(WGPULimits) bytes written, sane values in place */
    unsigned char lb[512];
    memset(lb, 0xAB, sizeof lb);
    WGPULimits *L = (WGPULimits *)lb;
    L->nextInChain = NULL;
    CHECK(F.wgpuAdapterGetLimits(g_adapter, L) == WGPUStatus_Success);
    int last = 0;
    for (int i = 0; i < (int)sizeof lb; i++)
        if (lb[i] != 0xAB) last = i;
    CHECK_MSG(last < (int)sizeof(WGPULimits) && last >= (int)sizeof(WGPULimits) - 8,
              "library wrote WGPULimits up to byte %d, our struct has %zu", last, sizeof(WGPULimits));
    CHECK(L->maxTextureDimension1D >= 8192 && L->maxTextureDimension2D >= 8192);
    CHECK(L->maxBindGroups >= 4 && L->maxBindGroups <= 64);
    CHECK(L->maxStorageBuffersPerShaderStage >= 8 && L->maxStorageBuffersPerShaderStage < 1u << 20);
    CHECK(L->maxUniformBufferBindingSize >= 16384 && L->maxUniformBufferBindingSize <= (1ull << 40));
    CHECK(L->maxStorageBufferBindingSize >= (128u << 20) && L->maxStorageBufferBindingSize <= (1ull << 44));
    CHECK(L->minUniformBufferOffsetAlignment >= 1 && L->minUniformBufferOffsetAlignment <= 256 &&
          (L->minUniformBufferOffsetAlignment & (L->minUniformBufferOffsetAlignment - 1)) == 0);
    CHECK(L->minStorageBufferOffsetAlignment >= 1 && L->minStorageBufferOffsetAlignment <= 256 &&
          (L->minStorageBufferOffsetAlignment & (L->minStorageBufferOffsetAlignment - 1)) == 0);
    CHECK(L->maxBufferSize >= (256u << 20));
    CHECK(L->maxComputeWorkgroupStorageSize >= 16384 && L->maxComputeWorkgroupStorageSize <= (1u << 20));
    CHECK(L->maxComputeInvocationsPerWorkgroup >= 256 && L->maxComputeInvocationsPerWorkgroup <= 4096);
    CHECK(L->maxComputeWorkgroupSizeX >= 256 && L->maxComputeWorkgroupSizeZ >= 64);
    CHECK(L->maxComputeWorkgroupsPerDimension >= 65535);
    /* adapter info */
    unsigned char ib[256];
    memset(ib, 0xAB, sizeof ib);
    WGPUAdapterInfo *I = (WGPUAdapterInfo *)ib;
    I->nextInChain = NULL;
    CHECK(F.wgpuAdapterGetInfo(g_adapter, I) == WGPUStatus_Success);
    last = 0;
    for (int i = 0; i < (int)sizeof ib; i++)
        if (ib[i] != 0xAB) last = i;
    CHECK_MSG(last == (int)sizeof(WGPUAdapterInfo) - 1, "library wrote WGPUAdapterInfo up to byte %d", last);
    CHECK(I->backendType >= WGPUBackendType_Null && I->backendType <= WGPUBackendType_OpenGLES);
    CHECK(I->adapterType >= WGPUAdapterType_DiscreteGPU && I->adapterType <= WGPUAdapterType_Unknown);
    CHECK(I->device.data != NULL && I->device.length > 0 && I->device.length < 1024);
    CHECK(I->subgroupMinSize <= I->subgroupMaxSize && I->subgroupMaxSize <= 256);
    printf("  adapter: %.*s, backend %d, type %d, subgroups %u..%u\n", (int)I->device.length, I->device.data,
           I->backendType, I->adapterType, I->subgroupMinSize, I->subgroupMaxSize);
    F.wgpuAdapterInfoFreeMembers(*I);
    /* features: the list and HasFeature agree on the numbers we use */
    WGPUSupportedFeatures sf;
    memset(&sf, 0, sizeof sf);
    F.wgpuAdapterGetFeatures(g_adapter, &sf);
    CHECK(sf.featureCount > 0 && sf.featureCount < 512);
    static const WGPUFeatureName ours[] = {WGPUFeatureName_TimestampQuery, WGPUFeatureName_ShaderF16,
                                           WGPUFeatureName_Subgroups, WGPUFeatureName_CoreFeaturesAndLimits};
    for (size_t k = 0; k < sizeof ours / sizeof ours[0]; k++) {
        int listed = 0;
        for (size_t i = 0; i < sf.featureCount; i++) listed |= sf.features[i] == ours[k];
        CHECK(listed == (F.wgpuAdapterHasFeature(g_adapter, ours[k]) != 0));
    }
    /* a core adapter lists core-features-and-limits (0x12 in this numbering) */
    CHECK(F.wgpuAdapterHasFeature(g_adapter, WGPUFeatureName_CoreFeaturesAndLimits));
    for (size_t i = 0; i < sf.featureCount; i++)
        CHECK((sf.features[i] >= 1 && sf.features[i] <= 0x40) || (sf.features[i] >= 0x50000 && sf.features[i] < 0x50100));
    F.wgpuSupportedFeaturesFreeMembers(sf);
    F.wgpuAdapterRelease(g_adapter);
    F.wgpuInstanceRelease(inst);
}

TT_TEST(test_binding_types_reach_the_library) {
    tt_gpu *g = NULL;
    tt_status st;
    CHECK(tt_gpu_open(NULL, &g, &st) == TT_OK);
    if (!g) return;
    const char *src =
        "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
        "@group(0) @binding(1) var<storage, read_write> b: array<f32>;\n"
        "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) {\n"
        "  if (i.x < arrayLength(&b)) { b[i.x] = 2.0 * a[i.x] + 1.0; }\n}\n";
    uint8_t good[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_RW}, bad[2] = {TT_GPU_BIND_READ, TT_GPU_BIND_READ};
    tt_gpu_kernel k = -1, kb = -1;
    CHECK(tt_gpu_kernel_create(g, src, "main", 2, good, "abi-good", &k, &st) == TT_OK);
    int rc = tt_gpu_kernel_create(g, src, "main", 2, bad, "abi-bad", &kb, &st);
    CHECK(rc == TT_EDEVICE && kb < 0);
    if (rc) printf("  rejected as expected: %.100s...\n", st.msg);
    /* and the good one computes: upload, dispatch, map-read */
    float x[100], y[100];
    for (int i = 0; i < 100; i++) x[i] = (float)i - 50.0f;
    tt_gpu_buf ba, bb;
    CHECK(tt_gpu_buffer(g, sizeof x, TT_GPU_STORAGE, "a", &ba, &st) == TT_OK);
    CHECK(tt_gpu_buffer(g, sizeof y, TT_GPU_STORAGE, "b", &bb, &st) == TT_OK);
    CHECK(tt_gpu_write(g, ba, 0, x, sizeof x, &st) == TT_OK);
    tt_gpu_binding bind[2] = {{ba, 0, 0}, {bb, 0, 0}};
    tt_gpu_group grp;
    CHECK(tt_gpu_group_create(g, k, 2, bind, &grp, &st) == TT_OK);
    CHECK(tt_gpu_begin(g, &st) == TT_OK);
    tt_gpu_dispatch(g, k, grp, 2, 1, 1);
    CHECK(tt_gpu_submit(g, &st) == TT_OK);
    CHECK(tt_gpu_read_sync(g, bb, 0, sizeof y, y, &st) == TT_OK);
    int ok = 1;
    for (int i = 0; i < 100; i++) ok &= y[i] == 2.0f * x[i] + 1.0f;
    CHECK(ok);
    /* compile errors come back as one-line messages, not crashes */
    kb = -1;
    rc = tt_gpu_kernel_create(g, "fn main( {", "main", 2, good, "abi-syntax", &kb, &st);
    CHECK(rc == TT_EDEVICE && strchr(st.msg, '\n') == NULL);
    /* bad handles / ranges are errors */
    CHECK(tt_gpu_write(g, ba, 4, x, sizeof x, &st) == TT_EINVAL);
    CHECK(tt_gpu_read_start(g, ba, 0, 4, &st) == TT_EINVAL);
    CHECK(tt_gpu_check(g, &st) == TT_OK);
    tt_gpu_close(g);
}

TT_TEST(test_missing_library) {
    tt_gpu_options o;
    memset(&o, 0, sizeof o);
    o.lib_path = "/nonexistent/libwebgpu.so";
    tt_gpu *g = NULL;
    tt_status st;
    CHECK(tt_gpu_open(&o, &g, &st) == TT_EUNSUP && g == NULL);
    CHECK(strstr(st.msg, "/nonexistent/libwebgpu.so") != NULL);
    /* a library without the webgpu.h symbols */
    o.lib_path = "libm.so.6";
    CHECK(tt_gpu_open(&o, &g, &st) == TT_EUNSUP && g == NULL);
    CHECK(strstr(st.msg, "lacks") != NULL);
}

int main(void) {
    RUN(test_struct_layouts);
    RUN(test_enum_values);
    RUN(test_missing_library);
    tt_gpu *g = NULL;
    tt_status st;
    if (tt_gpu_open(NULL, &g, &st) != TT_OK) {
        const char *req = getenv("TT_REQUIRE_WEBGPU");
        if (req && atoi(req)) {
            fprintf(stderr, "FAIL: TT_REQUIRE_WEBGPU=1 but WebGPU is unavailable: %s\n", st.msg);
            return 1;
        }
        printf("SKIP (library part): %s\n", st.msg);
        return tt_test_summary();
    }
    snprintf(LIB, sizeof LIB, "%s", tt_gpu_get_info(g)->lib_path);
    printf("library: %s\n", LIB);
    tt_gpu_close(g);
    RUN(test_exports);
    RUN(test_library_layouts);
    RUN(test_binding_types_reach_the_library);
    return tt_test_summary();
}
