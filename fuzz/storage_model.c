/*
 * storage_model.c - the eager-copy reference model (see storage_model.h).
 */
#include <stdlib.h>
#include <string.h>

#include "storage_model.h"

void
sm_init(struct sm_model *m)
{
	memset(m, 0, sizeof *m);
	for (int i = 0; i < SM_SLOTS; i++)
		m->s[i].group = -1;
}

void
sm_fini(struct sm_model *m)
{
	for (int i = 0; i < SM_SLOTS; i++)
		free(m->s[i].bytes);
	sm_init(m);
}

int
sm_free_slot(const struct sm_model *m)
{
	for (int i = 0; i < SM_SLOTS; i++)
		if (!m->s[i].live)
			return i;
	return -1;
}

int
sm_pick_live(const struct sm_model *m, unsigned k)
{
	unsigned n = 0;

	for (int i = 0; i < SM_SLOTS; i++)
		n += m->s[i].live;
	if (n == 0)
		return -1;
	k %= n;
	for (int i = 0; i < SM_SLOTS; i++)
		if (m->s[i].live && k-- == 0)
			return i;
	return -1;
}

static int
sm_group_new(struct sm_model *m, bool external)
{
	for (int i = 0; i < SM_GROUPS; i++) {
		if (!m->g[i].live) {
			m->g[i] = (struct sm_group){true, 1, external};
			return i;
		}
	}
	abort(); /* cannot happen: a group per live storage at most */
}

static void
sm_group_leave(struct sm_model *m, int g)
{
	if (--m->g[g].members > 0)
		return;
	m->g[g].live = false;
	if (m->g[g].external)
		m->external_deaths++;
}

/* Fill @slot with a storage of @nbytes bytes copied from @bytes (zeros when
 * NULL), alone in a new group. */
static bool
sm_fill(struct sm_model *m, int slot, const unsigned char *bytes,
    size_t nbytes, bool faulty, bool shareable, bool external)
{
	struct sm_storage *s = &m->s[slot];
	unsigned char *copy = calloc(nbytes > 0 ? nbytes : 1, 1);

	if (copy == NULL)
		return false;
	if (bytes != NULL && nbytes > 0)
		memcpy(copy, bytes, nbytes);
	*s = (struct sm_storage){.live = true, .nbytes = nbytes,
	    .bytes = copy, .group = sm_group_new(m, external), .refs = 1,
	    .cow = false, .faulty = faulty, .shareable = shareable};
	return true;
}

bool
sm_new(struct sm_model *m, int slot, size_t nbytes, bool faulty)
{
	return sm_fill(m, slot, NULL, nbytes, faulty, true, false);
}

bool
sm_external(struct sm_model *m, int slot, const unsigned char *bytes,
    size_t nbytes, bool shareable)
{
	/* Metadata and copies of external storages use the default
	 * allocator. */
	return sm_fill(m, slot, bytes, nbytes, false, shareable, true);
}

bool
sm_clone(struct sm_model *m, int src, int dst)
{
	struct sm_storage *s = &m->s[src], *d = &m->s[dst];

	if (!s->shareable || s->nbytes == 0) {
		/* An eager copy: a new private, shareable storage with the
		 * source's allocator. */
		if (!sm_fill(m, dst, s->bytes, s->nbytes, s->faulty, true,
		    false))
			return false;
		if (s->nbytes > 0) {
			m->eager++;
			m->copied += s->nbytes;
		}
		m->clones++;
		return true;
	}
	if (!sm_fill(m, dst, s->bytes, s->nbytes, s->faulty, true, false))
		return false;
	/* Join the source's allocation instead of the fresh group. */
	m->g[d->group].live = false;
	d->group = s->group;
	m->g[s->group].members++;
	s->cow = d->cow = true;
	m->clones++;
	return true;
}

enum sm_materialize
sm_would_materialize(const struct sm_model *m, int slot)
{
	const struct sm_storage *s = &m->s[slot];

	if (!s->cow)
		return SM_NOTHING;
	return m->g[s->group].members > 1 ? SM_COPY : SM_STEAL;
}

enum sm_materialize
sm_materialize(struct sm_model *m, int slot)
{
	struct sm_storage *s = &m->s[slot];
	enum sm_materialize what = sm_would_materialize(m, slot);

	if (what == SM_COPY) {
		sm_group_leave(m, s->group);
		s->group = sm_group_new(m, false);
		m->copies++;
		m->copied += s->nbytes;
	} else if (what == SM_STEAL) {
		m->steals++;
	}
	s->cow = false;
	return what;
}

void
sm_write(struct sm_model *m, int slot, size_t off, size_t len,
    const unsigned char *src)
{
	sm_materialize(m, slot);
	if (len > 0)
		memcpy(m->s[slot].bytes + off, src, len);
}

void
sm_retain(struct sm_model *m, int slot)
{
	m->s[slot].refs++;
}

void
sm_release(struct sm_model *m, int slot)
{
	struct sm_storage *s = &m->s[slot];

	if (--s->refs > 0)
		return;
	sm_group_leave(m, s->group);
	free(s->bytes);
	*s = (struct sm_storage){.group = -1};
}

bool
sm_clone_uses_fault(const struct sm_model *m, int src)
{
	/* Every clone allocates at least the new storage's metadata from
	 * the source's allocator. */
	return m->s[src].faulty;
}

unsigned
sm_share_count(const struct sm_model *m, int slot)
{
	return m->g[m->s[slot].group].members;
}

bool
sm_shares(const struct sm_model *m, int a, int b)
{
	return m->s[a].group == m->s[b].group;
}
