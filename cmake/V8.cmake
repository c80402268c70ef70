# V8 from Debian's libnode108 + libnode-dev, unpacked into the build tree by scripts/setup.sh.
# Node 18.20's V8 10.2 was built without pointer compression and without the V8 sandbox, so no
# V8_* configuration defines are needed. Never /usr/include/node (Node 20's V8 11.3 headers).
set(ISOLANE_LIBNODE_DIR "${CMAKE_BINARY_DIR}/deps/libnode" CACHE PATH "unpacked libnode108/libnode-dev")
set(_v8_include "${ISOLANE_LIBNODE_DIR}/usr/include/node")
set(_v8_lib "${ISOLANE_LIBNODE_DIR}/usr/lib/x86_64-linux-gnu/libnode.so.108")
if(NOT EXISTS "${_v8_include}/v8.h" OR NOT EXISTS "${_v8_lib}")
  message(FATAL_ERROR "V8 not found in ${ISOLANE_LIBNODE_DIR}; run scripts/setup.sh (make does).")
endif()
add_library(v8 SHARED IMPORTED GLOBAL)
set_target_properties(v8 PROPERTIES
  IMPORTED_LOCATION "${_v8_lib}"
  IMPORTED_NO_SONAME FALSE)
# SYSTEM: V8's headers are not ours to keep warning-free.
target_include_directories(v8 SYSTEM INTERFACE "${_v8_include}")
