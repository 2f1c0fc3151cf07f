package azsb

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	azruntime "github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus/admin"
	"github.com/minibus-go/minibus"
)

// AdminClient is azsb's *admin.Client: its methods for queues, topics,
// subscriptions, rules and namespace properties, with the admin package's
// types (ISO 8601 duration strings, pointer fields, pagers). Get one from
// [NewAdminClient]. An AdminClient is safe for concurrent use.
//
// As the admin client does, Get and GetRuntimeProperties of a missing
// entity return nil and no error, and the other calls report the service's
// HTTP answer as an *azcore.ResponseError: 404 for a missing entity, 409
// for a name taken, 400 for a property minibus refuses (the minibus error
// stays reachable with errors.Is). Over a nil namespace every call, Gets
// and lists included, is a 400 that wraps minibus.ErrInvalidArgument.
//
// Properties minibus has no use for (EnableBatchedOperations,
// EnablePartitioning, SupportOrdering, UserMetadata, AuthorizationRules)
// are kept per namespace and returned as set, and change nothing;
// partitioning does not multiply MaxSizeInMegabytes as on Standard.
type AdminClient struct {
	ns *minibus.Namespace
	x  *nsExtras
}

// NewAdminClient returns an AdminClient over ns. It stands where
// admin.NewClient or admin.NewClientFromConnectionString stands in
// production; options (API version, retries, transport, logging) are
// accepted for the same reason and ignored.
func NewAdminClient(ns *minibus.Namespace, options ...*admin.ClientOptions) *AdminClient {
	return &AdminClient{ns: ns, x: extrasOf(ns)}
}

// nsExtras is what azsb keeps of a namespace beyond minibus: the admin
// properties minibus does not store, and when azsb first saw it.
type nsExtras struct {
	created  time.Time
	mu       sync.Mutex
	entities map[string]*entityExtras // by lower-case path
}

// entityExtras are the admin properties of one entity minibus does not
// store. id is the entity's minibus handle, by value, so that an entity
// deleted and created anew (through minibus, or on idle) does not inherit
// them.
type entityExtras struct {
	id                 any
	batched            *bool
	partitioning       *bool
	supportOrdering    *bool
	userMetadata       *string
	authorizationRules []admin.AuthorizationRule
}

// registry maps a namespace to its extras for as long as it lives.
var registry sync.Map // weak.Pointer[minibus.Namespace] -> *nsExtras

func extrasOf(ns *minibus.Namespace) *nsExtras {
	fresh := &nsExtras{created: time.Now().UTC(), entities: map[string]*entityExtras{}}
	if ns == nil {
		return fresh
	}
	key := weak.Make(ns)
	v, loaded := registry.LoadOrStore(key, fresh)
	if !loaded {
		runtime.AddCleanup(ns, func(k weak.Pointer[minibus.Namespace]) { registry.Delete(k) }, key)
	}
	return v.(*nsExtras)
}

// get returns the extras kept for path if they belong to the entity id,
// else the defaults.
func (x *nsExtras) get(path string, id any) entityExtras {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.entities[strings.ToLower(path)]; ok && e.id == id {
		return *e
	}
	return entityExtras{id: id}
}

func (x *nsExtras) set(path string, e entityExtras) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entities[strings.ToLower(path)] = &e
}

// drop forgets path and, for a topic, its subscriptions.
func (x *nsExtras) drop(path string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := strings.ToLower(path)
	for k := range x.entities {
		if k == p || strings.HasPrefix(k, p+"/subscriptions/") {
			delete(x.entities, k)
		}
	}
}

// noNamespace is the error of every call of an AdminClient over a nil
// namespace: a 400 *azcore.ResponseError that wraps
// minibus.ErrInvalidArgument, as the calls that minibus answers give, also
// where a missing entity would be nil and no error (a Get, a list).
func (a *AdminClient) noNamespace(method, path string) error {
	if a.ns != nil {
		return nil
	}
	return responseError(http.StatusBadRequest, method, path, fmt.Errorf("azsb: nil *minibus.Namespace: %w", minibus.ErrInvalidArgument))
}

// GetNamespaceProperties describes the namespace: named "minibus", SKU
// "Standard" (minibus's limits are Standard's), no messaging units, created
// when azsb first saw it.
func (a *AdminClient) GetNamespaceProperties(ctx context.Context, options *admin.GetNamespacePropertiesOptions) (admin.GetNamespacePropertiesResponse, error) {
	if err := ctx.Err(); err != nil {
		return admin.GetNamespacePropertiesResponse{}, err
	}
	if err := a.noNamespace(http.MethodGet, "/$namespaceinfo"); err != nil {
		return admin.GetNamespacePropertiesResponse{}, err
	}
	return admin.GetNamespacePropertiesResponse{NamespaceProperties: admin.NamespaceProperties{
		CreatedTime: a.x.created, ModifiedTime: a.x.created, SKU: "Standard", Name: "minibus",
	}}, nil
}

// defaultPageSize is the number of items the service returns in a page
// when the caller sets no MaxPageSize.
const defaultPageSize = 100

// newPager pages through names as the admin client pages through the
// service's feeds: each fetch lists the names anew and skips those already
// returned; a page shorter than maxPageSize, or empty, is the last. With no
// maxPageSize the service's pages hold 100 items and the last page is an
// empty one, as with the real client. convert makes an item, or false if
// the entity went away meanwhile.
func newPager[R, T any](maxPageSize int32, names func() ([]string, error), convert func(string) (T, bool), page func([]T) R) *azruntime.Pager[R] {
	eof, skip := false, 0
	return azruntime.NewPager(azruntime.PagingHandler[R]{
		More: func(R) bool { return !eof },
		Fetcher: func(ctx context.Context, _ *R) (R, error) {
			var zero R
			if err := ctx.Err(); err != nil {
				eof = true
				return zero, err
			}
			all, err := names()
			if err != nil {
				eof = true
				return zero, err
			}
			size := int(maxPageSize)
			if size <= 0 {
				size = defaultPageSize
			}
			var items []T
			if skip < len(all) {
				for _, n := range all[skip:min(skip+size, len(all))] {
					if it, ok := convert(n); ok {
						items = append(items, it)
					}
				}
			}
			n := min(size, max(len(all)-skip, 0))
			if n == 0 || n < int(maxPageSize) {
				eof = true
			}
			skip += n
			return page(items), nil
		},
	})
}
