package admissionregistration

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Expressions are compiled the way the admission plugins compile them when
// they load a configuration: the same base environment (the apiserver's CEL
// compatibility version), the same variables (object, oldObject, request,
// namespaceObject, authorizer, params when the policy has a paramKind) and
// the same expected result types. An expression that compiles here is one
// the plugins can run.

var (
	plainCompilerOnce sync.Once
	plainCompiler     plugincel.Compiler
)

// sharedCompiler returns the compiler without variable composition, built
// once: match conditions, and policies that declare no variables, use it.
func sharedCompiler() plugincel.Compiler {
	plainCompilerOnce.Do(func() {
		plainCompiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	return plainCompiler
}

// newComposingCompiler returns a compiler that remembers the variables
// compiled with it, so later expressions may refer to variables.<name>. It
// holds state, so each policy gets its own. If one cannot be built (the
// base environment is fixed, so it never fails in practice), the shared
// compiler stands in and variables are reported as not allowed.
func newComposingCompiler() plugincel.Compiler {
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return sharedCompiler()
	}
	return c
}

// storedExpressions are the expressions an object already held before an
// update. They compile in the stored-expressions environment, which also
// knows CEL libraries newer than the compatibility version, so that an
// object written by a newer apiserver stays updatable. Upstream keeps one
// set per field; one set per object gives the same answers, since an
// expression's variables depend on the field it is compiled for, not on
// the set it was found in.
type storedExpressions map[string]bool

func (s storedExpressions) add(expr string) {
	if e := strings.TrimSpace(expr); e != "" {
		s[e] = true
	}
}

func (s storedExpressions) envType(expr string) environment.Type {
	if s[strings.TrimSpace(expr)] {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// compile compiles one expression and turns a failure into a field error at
// p: a compile or type error is Invalid with the expression as the value.
func compile(c plugincel.Compiler, expr plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	res := c.CompileCELExpression(expr, decls, env)
	if res.Error == nil {
		return nil
	}
	return field.ErrorList{celError(p, expr.GetExpression(), res.Error)}
}

// compileVariable compiles a variable and stores it in c, so expressions
// compiled after it may use it.
func compileVariable(c plugincel.Compiler, v plugincel.NamedExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	cc, ok := c.(*plugincel.CompositedCompiler)
	if !ok {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("variable composition is not allowed"))}
	}
	res := cc.CompileAndStoreVariable(v, decls, env)
	if res.Error == nil {
		return nil
	}
	return field.ErrorList{celError(p.Child("expression"), v.GetExpression(), res.Error)}
}

func celError(p *field.Path, expr string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(p, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(p, expr, err.Detail)
	default:
		return field.InternalError(p, err)
	}
}
