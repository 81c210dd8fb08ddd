/*
 * A C++ program that uses the installed cowstore: the public headers
 * compile as C++ (-Wall -Wextra -Wpedantic -Werror, C++11) and their
 * extern "C" declarations link against the C library. The storage is held
 * by a small RAII owner, as C++ code would. The test hooks' header
 * (testing.h, not included by cowstore.h) compiles and links as C++ too.
 */
#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

#include <cstdio>
#include <cstring>

namespace {

class storage {
public:
	explicit storage(cow_storage_t *s = nullptr) : s_(s) {}
	~storage() { if (s_ != nullptr) cow_storage_release(s_); }
	storage(const storage &) = delete;
	storage &operator=(const storage &) = delete;
	cow_storage_t **out() { return &s_; }
	cow_storage_t *get() const { return s_; }
private:
	cow_storage_t *s_;
};

} /* namespace */

int
main()
{
	storage a, b;
	void *p = nullptr;

	if (cow_storage_new(64, nullptr, a.out()) != COW_OK ||
	    cow_storage_lazy_clone(a.get(), b.out()) != COW_OK ||
	    cow_storage_mutable_data(b.get(), &p) != COW_OK) {
		std::printf("error: %s\n", cow_last_error());
		return 1;
	}
	std::memset(p, 1, 64);
	if (static_cast<const unsigned char *>(
	    cow_storage_const_data(a.get()))[0] != 0)
		return 2;
	if (std::strcmp(cow_version_string(), COW_VERSION_STRING) != 0)
		return 3;
	if (cow_allocator_fault_injected(nullptr) != 0)
		return 4;
	std::printf("ok (C++, cowstore %s)\n", cow_version_string());
	return 0;
}
