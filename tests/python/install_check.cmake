# install_check.cmake - the package as `cmake --install --component python`
# installs it: staged under DESTDIR, imported from there by the interpreter
# it was built for, exchanging an array with NumPy at zero copy; its
# extension exports one dynamic symbol, PyInit__cowstore (the library
# inside stays private), and the stubs and py.typed are beside it.
# Run: cmake -DBUILD=... -DSTAGE=... -DPYTHON=... -DINSTALL_DIR=... -P this
file(REMOVE_RECURSE ${STAGE})
execute_process(COMMAND ${CMAKE_COMMAND} -E env DESTDIR=${STAGE}
    ${CMAKE_COMMAND} --install ${BUILD} --component python
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed (${rc}):\n${out}")
endif()
set(site ${STAGE}${INSTALL_DIR})
file(GLOB modules ${site}/cowstore/_cowstore*.so)
list(LENGTH modules n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one module in ${site}, found: ${modules}")
endif()
message(STATUS "installed: ${modules}")
foreach(f __init__.py __init__.pyi py.typed)
  if(NOT EXISTS ${site}/cowstore/${f})
    message(FATAL_ERROR "${site}/cowstore/${f} is not installed")
  endif()
endforeach()

execute_process(COMMAND nm -D --defined-only ${modules}
  RESULT_VARIABLE rc OUTPUT_VARIABLE syms)
string(REGEX MATCHALL "[^\n]+ [TDBRVW] [^\n]+" exported "${syms}")
list(LENGTH exported n)
if(NOT rc EQUAL 0 OR NOT n EQUAL 1 OR NOT exported MATCHES " PyInit__cowstore$")
  message(FATAL_ERROR "the module must export PyInit__cowstore only; nm -D says:\n${syms}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${site}
    ${PYTHON} -c "
import os, numpy as np, cowstore
assert os.path.dirname(cowstore.__file__) == os.path.realpath('${site}/cowstore'), cowstore.__file__
a = np.arange(12, dtype=np.float32).reshape(3, 4)
t = cowstore.from_dlpack(a)
assert t.data_ptr() == a.ctypes.data and t.shape == (3, 4)
b = np.from_dlpack(t.lazy_clone())
assert (b == a).all()
print('imported', cowstore.__version__, 'from', cowstore.__file__)
"
  WORKING_DIRECTORY /
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed module failed (${rc}):\n${out}")
endif()
message(STATUS "${out}")
