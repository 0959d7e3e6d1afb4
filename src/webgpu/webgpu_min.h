/* webgpu_min.h — our own declarations of the subset of the WebGPU C API
 * (webgpu.h, webgpu-native/webgpu-headers) that tinytrain uses, written from
 * the published specification with the enum numbering and struct layouts of
 * the Dawn build we ship (npm bun-webgpu-linux-x64 0.1.7). That build is older
 * than the newest webgpu.h: feature names are numbered 0x1.. in the old order
 * (TimestampQuery 0x3, ShaderF16 0xA, Subgroups 0x11), buffer binding types
 * count BindingNotUsed = 0, and WGPUBindGroupLayoutEntry carries
 * bindingArraySize. Every value and layout here is checked against the
 * library by tests/test_webgpu_abi.c; values cross-checked with the public
 * source of the npm package (kommander/bun-webgpu, src/structs_def.ts).
 *
 * Nothing here is linked: device_dawn.c dlopen()s the library and fills a
 * table of function pointers with these types. */
#ifndef TT_WEBGPU_MIN_H
#define TT_WEBGPU_MIN_H

#include <stddef.h>
#include <stdint.h>

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_WHOLE_MAP_SIZE SIZE_MAX
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;

typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;
typedef struct WGPUSamplerImpl *WGPUSampler;
typedef struct WGPUTextureViewImpl *WGPUTextureView;

/* ---- enums (values of this Dawn build) ---------------------------------- */
typedef enum {
    WGPUSType_ShaderSourceWGSL = 0x00000002,
    WGPUSType_DawnTogglesDescriptor = 0x0005000A,
    WGPUSType_Force32 = 0x7FFFFFFF
} WGPUSType;

typedef enum {
    WGPUCallbackMode_WaitAnyOnly = 0x00000001,
    WGPUCallbackMode_AllowProcessEvents = 0x00000002,
    WGPUCallbackMode_AllowSpontaneous = 0x00000003,
    WGPUCallbackMode_Force32 = 0x7FFFFFFF
} WGPUCallbackMode;

typedef enum {
    WGPUFeatureLevel_Undefined = 0,
    WGPUFeatureLevel_Compatibility = 1,
    WGPUFeatureLevel_Core = 2,
    WGPUFeatureLevel_Force32 = 0x7FFFFFFF
} WGPUFeatureLevel;

typedef enum {
    WGPUPowerPreference_Undefined = 0,
    WGPUPowerPreference_LowPower = 1,
    WGPUPowerPreference_HighPerformance = 2,
    WGPUPowerPreference_Force32 = 0x7FFFFFFF
} WGPUPowerPreference;

typedef enum {
    WGPUBackendType_Undefined = 0,
    WGPUBackendType_Null = 1,
    WGPUBackendType_WebGPU = 2,
    WGPUBackendType_D3D11 = 3,
    WGPUBackendType_D3D12 = 4,
    WGPUBackendType_Metal = 5,
    WGPUBackendType_Vulkan = 6,
    WGPUBackendType_OpenGL = 7,
    WGPUBackendType_OpenGLES = 8,
    WGPUBackendType_Force32 = 0x7FFFFFFF
} WGPUBackendType;

typedef enum {
    WGPUAdapterType_DiscreteGPU = 1,
    WGPUAdapterType_IntegratedGPU = 2,
    WGPUAdapterType_CPU = 3,
    WGPUAdapterType_Unknown = 4,
    WGPUAdapterType_Force32 = 0x7FFFFFFF
} WGPUAdapterType;

typedef enum {
    WGPUFeatureName_TimestampQuery = 0x00000003,
    WGPUFeatureName_ShaderF16 = 0x0000000A,
    WGPUFeatureName_Subgroups = 0x00000011,
    WGPUFeatureName_CoreFeaturesAndLimits = 0x00000012,
    WGPUFeatureName_ChromiumExperimentalSubgroupMatrix = 0x00050038,
    WGPUFeatureName_Force32 = 0x7FFFFFFF
} WGPUFeatureName;

typedef enum {
    WGPURequestAdapterStatus_Success = 1,
    WGPURequestAdapterStatus_Force32 = 0x7FFFFFFF
} WGPURequestAdapterStatus;

typedef enum {
    WGPURequestDeviceStatus_Success = 1,
    WGPURequestDeviceStatus_Force32 = 0x7FFFFFFF
} WGPURequestDeviceStatus;

typedef enum {
    WGPUMapAsyncStatus_Success = 1,
    WGPUMapAsyncStatus_Force32 = 0x7FFFFFFF
} WGPUMapAsyncStatus;

typedef enum {
    WGPUPopErrorScopeStatus_Success = 1,
    WGPUPopErrorScopeStatus_Force32 = 0x7FFFFFFF
} WGPUPopErrorScopeStatus;

typedef enum {
    WGPUStatus_Success = 1,
    WGPUStatus_Error = 2,
    WGPUStatus_Force32 = 0x7FFFFFFF
} WGPUStatus;

typedef enum {
    WGPUWaitStatus_Success = 1,
    WGPUWaitStatus_TimedOut = 2,
    WGPUWaitStatus_Force32 = 0x7FFFFFFF
} WGPUWaitStatus;

typedef enum {
    WGPUErrorType_NoError = 1,
    WGPUErrorType_Validation = 2,
    WGPUErrorType_OutOfMemory = 3,
    WGPUErrorType_Internal = 4,
    WGPUErrorType_Unknown = 5,
    WGPUErrorType_Force32 = 0x7FFFFFFF
} WGPUErrorType;

typedef enum {
    WGPUErrorFilter_Validation = 1,
    WGPUErrorFilter_OutOfMemory = 2,
    WGPUErrorFilter_Internal = 3,
    WGPUErrorFilter_Force32 = 0x7FFFFFFF
} WGPUErrorFilter;

typedef enum {
    WGPUDeviceLostReason_Unknown = 1,
    WGPUDeviceLostReason_Destroyed = 2,
    WGPUDeviceLostReason_CallbackCancelled = 3,
    WGPUDeviceLostReason_FailedCreation = 4,
    WGPUDeviceLostReason_Force32 = 0x7FFFFFFF
} WGPUDeviceLostReason;

typedef enum {
    WGPUBufferBindingType_BindingNotUsed = 0,
    WGPUBufferBindingType_Undefined = 1,
    WGPUBufferBindingType_Uniform = 2,
    WGPUBufferBindingType_Storage = 3,
    WGPUBufferBindingType_ReadOnlyStorage = 4,
    WGPUBufferBindingType_Force32 = 0x7FFFFFFF
} WGPUBufferBindingType;

typedef enum {
    WGPUQueryType_Occlusion = 1,
    WGPUQueryType_Timestamp = 2,
    WGPUQueryType_Force32 = 0x7FFFFFFF
} WGPUQueryType;

/* flag sets (64-bit in this API version) */
#define WGPUBufferUsage_MapRead ((WGPUFlags)0x1)
#define WGPUBufferUsage_MapWrite ((WGPUFlags)0x2)
#define WGPUBufferUsage_CopySrc ((WGPUFlags)0x4)
#define WGPUBufferUsage_CopyDst ((WGPUFlags)0x8)
#define WGPUBufferUsage_Uniform ((WGPUFlags)0x40)
#define WGPUBufferUsage_Storage ((WGPUFlags)0x80)
#define WGPUBufferUsage_QueryResolve ((WGPUFlags)0x200)
#define WGPUMapMode_Read ((WGPUFlags)0x1)
#define WGPUShaderStage_Compute ((WGPUFlags)0x4)

/* ---- structs ------------------------------------------------------------ */
typedef struct {
    const char *data;
    size_t length; /* WGPU_STRLEN: NUL-terminated */
} WGPUStringView;

typedef struct WGPUChainedStruct {
    const struct WGPUChainedStruct *next;
    WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUChainedStructOut {
    struct WGPUChainedStructOut *next;
    WGPUSType sType;
} WGPUChainedStructOut;

typedef struct {
    uint64_t id;
} WGPUFuture;

typedef struct {
    WGPUFuture future;
    WGPUBool completed;
} WGPUFutureWaitInfo;

typedef struct {
    WGPUChainedStructOut *nextInChain;
    WGPUBool timedWaitAnyEnable;
    size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUInstanceCapabilities features;
} WGPUInstanceDescriptor;

typedef struct {
    WGPUChainedStruct chain;
    size_t enabledToggleCount;
    const char *const *enabledToggles;
    size_t disabledToggleCount;
    const char *const *disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUFeatureLevel featureLevel;
    WGPUPowerPreference powerPreference;
    WGPUBool forceFallbackAdapter;
    WGPUBackendType backendType;
    void *compatibleSurface;
} WGPURequestAdapterOptions;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void *userdata1, void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPURequestAdapterCallback callback;
    void *userdata1;
    void *userdata2;
} WGPURequestAdapterCallbackInfo;

typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                                          void *userdata1, void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPURequestDeviceCallback callback;
    void *userdata1;
    void *userdata2;
} WGPURequestDeviceCallbackInfo;

typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, WGPUDeviceLostReason reason, WGPUStringView message,
                                       void *userdata1, void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUDeviceLostCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUDeviceLostCallbackInfo;

typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, WGPUErrorType type, WGPUStringView message,
                                            void *userdata1, void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUUncapturedErrorCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1,
                                      void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUBufferMapCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUBufferMapCallbackInfo;

typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                                          void *userdata1, void *userdata2);
typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUCallbackMode mode;
    WGPUPopErrorScopeCallback callback;
    void *userdata1;
    void *userdata2;
} WGPUPopErrorScopeCallbackInfo;

typedef struct {
    WGPUChainedStructOut *nextInChain;
    uint32_t maxTextureDimension1D;
    uint32_t maxTextureDimension2D;
    uint32_t maxTextureDimension3D;
    uint32_t maxTextureArrayLayers;
    uint32_t maxBindGroups;
    uint32_t maxBindGroupsPlusVertexBuffers;
    uint32_t maxBindingsPerBindGroup;
    uint32_t maxDynamicUniformBuffersPerPipelineLayout;
    uint32_t maxDynamicStorageBuffersPerPipelineLayout;
    uint32_t maxSampledTexturesPerShaderStage;
    uint32_t maxSamplersPerShaderStage;
    uint32_t maxStorageBuffersPerShaderStage;
    uint32_t maxStorageTexturesPerShaderStage;
    uint32_t maxUniformBuffersPerShaderStage;
    uint64_t maxUniformBufferBindingSize;
    uint64_t maxStorageBufferBindingSize;
    uint32_t minUniformBufferOffsetAlignment;
    uint32_t minStorageBufferOffsetAlignment;
    uint32_t maxVertexBuffers;
    uint64_t maxBufferSize;
    uint32_t maxVertexAttributes;
    uint32_t maxVertexBufferArrayStride;
    uint32_t maxInterStageShaderVariables;
    uint32_t maxColorAttachments;
    uint32_t maxColorAttachmentBytesPerSample;
    uint32_t maxComputeWorkgroupStorageSize;
    uint32_t maxComputeInvocationsPerWorkgroup;
    uint32_t maxComputeWorkgroupSizeX;
    uint32_t maxComputeWorkgroupSizeY;
    uint32_t maxComputeWorkgroupSizeZ;
    uint32_t maxComputeWorkgroupsPerDimension;
    uint32_t maxImmediateSize; /* last field in this build (152 bytes); newer
                                  headers add the per-stage vertex/fragment limits */
} WGPULimits;

typedef struct {
    size_t featureCount;
    const WGPUFeatureName *features;
} WGPUSupportedFeatures;

typedef struct {
    WGPUChainedStructOut *nextInChain;
    WGPUStringView vendor;
    WGPUStringView architecture;
    WGPUStringView device;
    WGPUStringView description;
    WGPUBackendType backendType;
    WGPUAdapterType adapterType;
    uint32_t vendorID;
    uint32_t deviceID;
    uint32_t subgroupMinSize;
    uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t requiredFeatureCount;
    const WGPUFeatureName *requiredFeatures;
    const WGPULimits *requiredLimits;
    WGPUQueueDescriptor defaultQueue;
    WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
    WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUFlags usage;
    uint64_t size;
    WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct {
    WGPUChainedStruct chain;
    WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUBufferBindingType type;
    WGPUBool hasDynamicOffset;
    uint64_t minBindingSize;
} WGPUBufferBindingLayout;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    uint32_t type;
} WGPUSamplerBindingLayout;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    uint32_t sampleType;
    uint32_t viewDimension;
    WGPUBool multisampled;
} WGPUTextureBindingLayout;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    uint32_t access;
    uint32_t format;
    uint32_t viewDimension;
} WGPUStorageTextureBindingLayout;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    uint32_t binding;
    WGPUFlags visibility;
    uint32_t bindingArraySize;
    WGPUBufferBindingLayout buffer;
    WGPUSamplerBindingLayout sampler;
    WGPUTextureBindingLayout texture;
    WGPUStorageTextureBindingLayout storageTexture;
} WGPUBindGroupLayoutEntry;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t entryCount;
    const WGPUBindGroupLayoutEntry *entries;
} WGPUBindGroupLayoutDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    uint32_t binding;
    WGPUBuffer buffer;
    uint64_t offset;
    uint64_t size;
    WGPUSampler sampler;
    WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUBindGroupLayout layout;
    size_t entryCount;
    const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    size_t bindGroupLayoutCount;
    const WGPUBindGroupLayout *bindGroupLayouts;
    uint32_t immediateSize;
} WGPUPipelineLayoutDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView key;
    double value;
} WGPUConstantEntry;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUShaderModule module;
    WGPUStringView entryPoint;
    size_t constantCount;
    const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUPipelineLayout layout;
    WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUQuerySet querySet;
    uint32_t beginningOfPassWriteIndex;
    uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    const WGPUPassTimestampWrites *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
} WGPUCommandBufferDescriptor;

typedef struct {
    const WGPUChainedStruct *nextInChain;
    WGPUStringView label;
    WGPUQueryType type;
    uint32_t count;
} WGPUQuerySetDescriptor;

/* ---- functions: the X-macro list of every symbol we dlsym ---------------
 * X(return type, name, (parameters)) */
#define TT_WGPU_FUNCS(X)                                                                                            \
    X(WGPUInstance, wgpuCreateInstance, (const WGPUInstanceDescriptor *descriptor))                                 \
    X(WGPUStatus, wgpuGetInstanceCapabilities, (WGPUInstanceCapabilities *capabilities))                            \
    X(WGPUFuture, wgpuInstanceRequestAdapter,                                                                       \
      (WGPUInstance instance, const WGPURequestAdapterOptions *options, WGPURequestAdapterCallbackInfo info))       \
    X(void, wgpuInstanceProcessEvents, (WGPUInstance instance))                                                     \
    X(WGPUWaitStatus, wgpuInstanceWaitAny,                                                                          \
      (WGPUInstance instance, size_t futureCount, WGPUFutureWaitInfo *futures, uint64_t timeoutNS))                 \
    X(void, wgpuInstanceRelease, (WGPUInstance instance))                                                           \
    X(WGPUStatus, wgpuAdapterGetLimits, (WGPUAdapter adapter, WGPULimits *limits))                                  \
    X(WGPUStatus, wgpuAdapterGetInfo, (WGPUAdapter adapter, WGPUAdapterInfo *info))                                 \
    X(void, wgpuAdapterInfoFreeMembers, (WGPUAdapterInfo info))                                                     \
    X(WGPUBool, wgpuAdapterHasFeature, (WGPUAdapter adapter, WGPUFeatureName feature))                              \
    X(void, wgpuAdapterGetFeatures, (WGPUAdapter adapter, WGPUSupportedFeatures *features))                         \
    X(void, wgpuSupportedFeaturesFreeMembers, (WGPUSupportedFeatures features))                                     \
    X(WGPUFuture, wgpuAdapterRequestDevice,                                                                         \
      (WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor, WGPURequestDeviceCallbackInfo info))            \
    X(void, wgpuAdapterRelease, (WGPUAdapter adapter))                                                              \
    X(WGPUStatus, wgpuDeviceGetLimits, (WGPUDevice device, WGPULimits *limits))                                     \
    X(WGPUBool, wgpuDeviceHasFeature, (WGPUDevice device, WGPUFeatureName feature))                                 \
    X(WGPUQueue, wgpuDeviceGetQueue, (WGPUDevice device))                                                           \
    X(WGPUBuffer, wgpuDeviceCreateBuffer, (WGPUDevice device, const WGPUBufferDescriptor *descriptor))              \
    X(WGPUShaderModule, wgpuDeviceCreateShaderModule,                                                               \
      (WGPUDevice device, const WGPUShaderModuleDescriptor *descriptor))                                            \
    X(WGPUBindGroupLayout, wgpuDeviceCreateBindGroupLayout,                                                         \
      (WGPUDevice device, const WGPUBindGroupLayoutDescriptor *descriptor))                                         \
    X(WGPUPipelineLayout, wgpuDeviceCreatePipelineLayout,                                                           \
      (WGPUDevice device, const WGPUPipelineLayoutDescriptor *descriptor))                                          \
    X(WGPUComputePipeline, wgpuDeviceCreateComputePipeline,                                                         \
      (WGPUDevice device, const WGPUComputePipelineDescriptor *descriptor))                                         \
    X(WGPUBindGroup, wgpuDeviceCreateBindGroup, (WGPUDevice device, const WGPUBindGroupDescriptor *descriptor))     \
    X(WGPUCommandEncoder, wgpuDeviceCreateCommandEncoder,                                                           \
      (WGPUDevice device, const WGPUCommandEncoderDescriptor *descriptor))                                          \
    X(WGPUQuerySet, wgpuDeviceCreateQuerySet, (WGPUDevice device, const WGPUQuerySetDescriptor *descriptor))        \
    X(void, wgpuDevicePushErrorScope, (WGPUDevice device, WGPUErrorFilter filter))                                  \
    X(WGPUFuture, wgpuDevicePopErrorScope, (WGPUDevice device, WGPUPopErrorScopeCallbackInfo info))                 \
    X(void, wgpuDeviceDestroy, (WGPUDevice device))                                                                 \
    X(void, wgpuDeviceRelease, (WGPUDevice device))                                                                 \
    X(void, wgpuQueueSubmit, (WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer *commands))             \
    X(void, wgpuQueueWriteBuffer,                                                                                   \
      (WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void *data, size_t size))                   \
    X(void, wgpuQueueRelease, (WGPUQueue queue))                                                                    \
    X(WGPUFuture, wgpuBufferMapAsync,                                                                               \
      (WGPUBuffer buffer, WGPUFlags mode, size_t offset, size_t size, WGPUBufferMapCallbackInfo info))              \
    X(const void *, wgpuBufferGetConstMappedRange, (WGPUBuffer buffer, size_t offset, size_t size))                 \
    X(void, wgpuBufferUnmap, (WGPUBuffer buffer))                                                                   \
    X(void, wgpuBufferDestroy, (WGPUBuffer buffer))                                                                 \
    X(void, wgpuBufferRelease, (WGPUBuffer buffer))                                                                 \
    X(void, wgpuShaderModuleRelease, (WGPUShaderModule module))                                                     \
    X(void, wgpuBindGroupLayoutRelease, (WGPUBindGroupLayout layout))                                               \
    X(void, wgpuPipelineLayoutRelease, (WGPUPipelineLayout layout))                                                 \
    X(void, wgpuComputePipelineRelease, (WGPUComputePipeline pipeline))                                             \
    X(void, wgpuBindGroupRelease, (WGPUBindGroup group))                                                            \
    X(WGPUComputePassEncoder, wgpuCommandEncoderBeginComputePass,                                                   \
      (WGPUCommandEncoder encoder, const WGPUComputePassDescriptor *descriptor))                                    \
    X(void, wgpuCommandEncoderCopyBufferToBuffer,                                                                   \
      (WGPUCommandEncoder encoder, WGPUBuffer source, uint64_t sourceOffset, WGPUBuffer destination,                \
       uint64_t destinationOffset, uint64_t size))                                                                  \
    X(void, wgpuCommandEncoderClearBuffer,                                                                          \
      (WGPUCommandEncoder encoder, WGPUBuffer buffer, uint64_t offset, uint64_t size))                              \
    X(void, wgpuCommandEncoderResolveQuerySet,                                                                      \
      (WGPUCommandEncoder encoder, WGPUQuerySet querySet, uint32_t firstQuery, uint32_t queryCount,                 \
       WGPUBuffer destination, uint64_t destinationOffset))                                                         \
    X(WGPUCommandBuffer, wgpuCommandEncoderFinish,                                                                  \
      (WGPUCommandEncoder encoder, const WGPUCommandBufferDescriptor *descriptor))                                  \
    X(void, wgpuCommandEncoderRelease, (WGPUCommandEncoder encoder))                                                \
    X(void, wgpuCommandBufferRelease, (WGPUCommandBuffer buffer))                                                   \
    X(void, wgpuComputePassEncoderSetPipeline, (WGPUComputePassEncoder pass, WGPUComputePipeline pipeline))         \
    X(void, wgpuComputePassEncoderSetBindGroup,                                                                     \
      (WGPUComputePassEncoder pass, uint32_t groupIndex, WGPUBindGroup group, size_t dynamicOffsetCount,            \
       const uint32_t *dynamicOffsets))                                                                             \
    X(void, wgpuComputePassEncoderDispatchWorkgroups,                                                               \
      (WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z))                                            \
    X(void, wgpuComputePassEncoderWriteTimestamp,                                                                   \
      (WGPUComputePassEncoder pass, WGPUQuerySet querySet, uint32_t queryIndex))                                    \
    X(void, wgpuComputePassEncoderEnd, (WGPUComputePassEncoder pass))                                               \
    X(void, wgpuComputePassEncoderRelease, (WGPUComputePassEncoder pass))                                           \
    X(void, wgpuQuerySetDestroy, (WGPUQuerySet querySet))                                                           \
    X(void, wgpuQuerySetRelease, (WGPUQuerySet querySet))

#endif
